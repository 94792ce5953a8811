/**
 * Small fact queries several rule files share (GPU visibility, effective MCA settings, UCX transports).
 */
import type { Evidence } from '../../shared/report';
import type { Facts, McaSetting } from '../facts';
import { transportNames } from '../parsers/ucxInfo';
import { mcaSettingsFromEnv } from '../parsers/mcaParams';
import { mcaParam } from '../parsers/ompiInfo';

/** How many GPUs are visible, with the evidence that shows it (0 with evidence = checked and none seen). */
export function visibleGpus(facts: Facts): { count: number; evidence: Evidence[] } {
	if (facts.gpu.gpus.length > 0) { return { count: facts.gpu.gpus.length, evidence: facts.gpu.gpus.map((g) => g.evidence) }; }
	const topoGpus = facts.gpu.topology.filter((r) => /^GPU\d+$/.test(r.device));
	if (topoGpus.length > 0) { return { count: topoGpus.length, evidence: topoGpus.map((r) => r.evidence) }; }
	const ranks = facts.engine?.ranks ?? [];
	const withDev = ranks.find((r) => r.deviceCount.value > 0);
	if (withDev) { return { count: withDev.deviceCount.value, evidence: [withDev.deviceCount.evidence] }; }
	const nvml = facts.probe?.nvml;
	if (nvml && nvml.devices.length > 0) {
		return { count: nvml.devices.length, evidence: nvml.devices.map((d) => ({ source: 'probe', line: `nvml device ${d.index}: ${d.name} ${d.pci_bus_id}` })) };
	}
	return { count: 0, evidence: [] };
}

/** True when the open MPI in use is Open MPI (by any source). */
export function isOpenMpi(facts: Facts): boolean {
	return facts.mpi.implementation?.value === 'openmpi' || (facts.mpi.implementation === null && facts.mpi.openmpi !== null);
}

/** Every MCA setting from param files, the collector env and engine rank envs, in increasing precedence. */
export function mcaSettings(facts: Facts): McaSetting[] {
	const fromEngine = (facts.engine?.ranks ?? []).flatMap((r) => mcaSettingsFromEnv(r.env, `engine rank ${r.rank} environment`));
	return [...facts.mpi.paramFiles.flatMap((f) => f.settings), ...facts.mpi.envParams, ...fromEngine];
}

/** Value of an environment variable in the collector env or any engine rank (engine first: what ranks really got). */
export function envSettings(facts: Facts, name: string): { value: string; evidence: Evidence; origin: string }[] {
	const out: { value: string; evidence: Evidence; origin: string }[] = [];
	for (const r of facts.engine?.ranks ?? []) {
		const e = r.env.find((x) => x.name === name);
		if (e) { out.push({ value: e.value, evidence: e.evidence, origin: `engine rank ${r.rank} environment` }); }
	}
	const c = facts.env.find((e) => e.name === name);
	if (c) { out.push({ value: c.value, evidence: c.evidence, origin: 'collector environment' }); }
	return out;
}

/** UCX transport names from `ucx_info -d` (empty when not listed). */
export function ucxTransports(facts: Facts): string[] {
	return transportNames(facts.ucx);
}

/** The UCX transports that can move CUDA memory. */
export const CUDA_TRANSPORTS = ['cuda_copy', 'cuda_ipc', 'gdr_copy'];

/** UCX transports that use InfiniBand / RoCE hardware. */
export function isIbTransport(name: string): boolean {
	return /^(rc|dc|ud)(_verbs|_mlx5)?$|^rc_|^dc_|^ud_/.test(name);
}

/** Compare dotted versions: <0, 0, >0. */
export function compareVersions(a: number[], b: number[]): number {
	for (let i = 0; i < Math.max(a.length, b.length); i++) {
		const d = (a[i] ?? 0) - (b[i] ?? 0);
		if (d !== 0) { return d; }
	}
	return 0;
}

/** Directory part of an absolute path. */
export function dirOf(p: string): string {
	const i = p.lastIndexOf('/');
	return i <= 0 ? '/' : p.slice(0, i);
}

/**
 * Whether Open MPI's pml ucx refuses every transport UCX offers here with its pml_ucx_tls / pml_ucx_devices values
 * (Open MPI >= 4.1: opal/mca/common/ucx/common_ucx.c checks UCX's transports against them): 'transports' when no
 * transport is named (then `--mca pml ucx` alone fails), 'devices' when no device of a named one matches (pml ucx
 * drops below ob1). Null when it accepts one, or when the facts do not say. Read by the rule that reports it
 * (ompi-pml-ucx-transport-defaults) and by every rule whose fix selects pml ucx, so no fix contradicts it.
 */
export function pmlUcxRefusal(facts: Facts): {
	refuses: 'transports' | 'devices';
	tlsP: NonNullable<ReturnType<typeof mcaParam>>; devP: NonNullable<ReturnType<typeof mcaParam>>;
	avail: NonNullable<Facts['ucx']>['transports']; tlMatch: NonNullable<Facts['ucx']>['transports'];
} | null {
	const o = facts.mpi.openmpi;
	const tlsP = mcaParam(o, 'pml_ucx_tls');
	const devP = mcaParam(o, 'pml_ucx_devices');
	if (!tlsP || !devP || !facts.ucx?.devicesListed) { return null; }
	const tlsList = tlsP.value.replace(/^\^/, '').split(',').map((s) => s.trim()).filter((s) => s !== '');
	const negate = tlsP.value.startsWith('^');
	const anyTl = tlsP.value.trim() === 'any';
	const anyDev = devP.value.trim() === 'any';
	const avail = facts.ucx.transports;
	const tlMatch = avail.filter((t) => anyTl || (negate ? !tlsList.includes(t.name) : tlsList.includes(t.name)));
	const devRes = devP.value.split(',').map((p) => new RegExp(`^${p.trim().replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`));
	const devMatch = tlMatch.filter((t) => anyDev || devRes.some((re) => re.test(t.device)));
	if (tlMatch.length === 0) { return { refuses: 'transports', tlsP, devP, avail, tlMatch }; }
	if (devMatch.length === 0) { return { refuses: 'devices', tlsP, devP, avail, tlMatch }; }
	return null;
}
