/**
 * A host that could not be reached: the collector tests the connection first (Host.connect) and, when it fails,
 * records only that attempt (RawOutput "connect": ssh's argv, its own stderr, the failure class in a note) and looks
 * at nothing else. The analysis then reports exactly one finding, "host-unreachable", and no rule runs: nothing was
 * looked at, so nothing may be reported absent (no "No MPI found" for a host that was never reached).
 * Pure; the same for live inspections and offline bundles.
 */
import type { HostConnectResult } from './host';
import type { Evidence, Finding, Fix, HostSummary, RawOutput } from '../shared/report';
import { connectReason } from '../shared/headline';

/** RawOutput id of a failed connection attempt. */
export const CONNECT_ID = 'connect';

/** Finding id of an unreachable host. */
export const UNREACHABLE_ID = 'host-unreachable';

/** The note prefix connectReason (shared/headline.ts) reads back. */
const KIND_NOTE = 'reason: ';

/** The RawOutput of a failed connection (what collect returns instead of everything else). */
export function connectOutput(c: Extract<HostConnectResult, { ok: false }>): RawOutput {
	return {
		id: CONNECT_ID, command: c.command, exitCode: null, stdout: '', stderr: c.stderr, durationMs: c.durationMs,
		error: c.error, notes: [`${KIND_NOTE}${c.kind} (${c.label})`, 'nothing else was run or read on this host'],
	};
}

/**
 * The failed connection of a report's raw outputs, if it has one, with its fields made safe to read (a bundle's
 * raw outputs are untyped data: analyze must stay total).
 */
export function failedConnection(raw: readonly RawOutput[]): RawOutput | undefined {
	if (!Array.isArray(raw)) { return undefined; }
	const r = raw.find((x: unknown) => typeof x === 'object' && x !== null && (x as RawOutput).id === CONNECT_ID && (x as RawOutput).exitCode !== 0);
	if (!r) { return undefined; }
	const strings = (v: unknown): string[] => Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
	return {
		id: CONNECT_ID, command: strings(r.command), exitCode: null, stdout: '', stderr: typeof r.stderr === 'string' ? r.stderr : '',
		durationMs: typeof r.durationMs === 'number' ? r.durationMs : 0, error: typeof r.error === 'string' ? r.error : 'the connection failed',
		notes: strings(r.notes),
	};
}

/** The failure class of a failed connection ("refused", …) and its label, from its note. */
export const connectKind: (r: RawOutput) => { kind: string; label: string } = connectReason;

/** What to do about each failure class; `dest` is the ssh destination (already checked by destinationProblem). */
function fixFor(kind: string, dest: string): Fix {
	switch (kind) {
		case 'name-not-resolved':
			return { text: 'Check the spelling, or give the alias a HostName in ~/.ssh/config; this prints the name ssh looks up:', command: `ssh -G ${dest}` };
		case 'refused':
			return { text: 'Nothing listens on the SSH port there: start sshd on the host, or set the right Port in ~/.ssh/config. To see what ssh tries:', command: `ssh -v ${dest} true` };
		case 'host-key-changed':
			return { text: 'Verify the new host key with the administrators first; then remove the old entry and connect once with plain ssh:', command: `ssh-keygen -R ${dest}` };
		case 'host-key-unknown':
			return { text: 'Connect once with plain ssh, check the fingerprint it shows and accept it:', command: `ssh ${dest} true` };
		case 'auth-failed':
			return { text: 'Install your public key on the host (key login without prompts), or load the key into ssh-agent:', command: `ssh-copy-id ${dest}` };
		case 'timeout': case 'unreachable':
			return { text: 'Check the address, the VPN or jump host (ProxyJump) and the firewall; to see where it stops:', command: `ssh -v -o ConnectTimeout=30 ${dest} true` };
		default:
			return { text: 'Run ssh by hand to see the whole story:', command: `ssh -v ${dest} true` };
	}
}

/** The one finding of an unreachable host: the reason, ssh's own lines as evidence, and the fix for that reason. */
export function unreachableFinding(r: RawOutput, hostLabel: string): Finding {
	const { kind, label } = connectKind(r);
	const dest = r.command.length > 0 ? r.command[r.command.length - 1] : hostLabel;
	const lines = r.stderr.split('\n').map((line, i) => ({ line: line.replace(/\r$/, ''), lineNo: i + 1 }))
		.filter(l => l.line.trim().length > 0 && !/^Warning: Permanently added/.test(l.line));
	const evidence: Evidence[] = lines.slice(-5).map(l => ({ source: CONNECT_ID, line: l.line, lineNo: l.lineNo }));
	if (evidence.length === 0) { evidence.push({ source: CONNECT_ID, line: r.error ?? 'the connection failed' }); }
	return {
		id: UNREACHABLE_ID, severity: 'error', title: `Cannot reach ${hostLabel} (${label})`,
		message: `cannot reach ${hostLabel}: ${r.error ?? 'the connection failed'}. Nothing was run or read there, so this report `
			+ 'says nothing about its MPI, UCX, CUDA or GPUs.',
		evidence, fix: fixFor(kind, dest), source: 'OpenSSH ssh(1), ssh_config(5): https://man.openbsd.org/ssh',
	};
}

/** The header of an unreachable host: nothing checked. */
export function unreachableSummary(hostLabel: string, label: string): HostSummary {
	const why = `not checked: host unreachable (${label})`;
	return {
		hostname: hostLabel,
		mpi: { label: 'not checked', cudaAware: 'unknown', detail: why },
		ucx: { label: 'not checked', cuda: 'unknown', detail: why },
		cuda: { label: 'not checked', driverVersion: '' },
		gpus: [],
	};
}
