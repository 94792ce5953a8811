/**
 * The evidence switches of the launches that want to know their transports (reproducers, map): the settings that
 * make UCX and Open MPI print which transport carries each peer (read back by parsers/transportLines.ts), and the pml
 * ucx selection. They are LaunchConfigs applied on top of a launch.
 */
import type { LaunchConfig, MpiFlavor } from './launchSpec';

/** Environment for UCX evidence: lanes always, protocol tables when asked (UCX 1.13 needs UCX_PROTO_ENABLE=y too). */
export function evidenceEnv(protoInfo: boolean): Array<[string, string]> {
	const env: Array<[string, string]> = [['UCX_LOG_LEVEL', 'info']];
	if (protoInfo) { env.push(['UCX_PROTO_INFO', 'y'], ['UCX_PROTO_ENABLE', 'y']); }
	return env;
}

/** Open MPI: print which btl carries each peer ("mca: bml: Using smcuda btl for send to … on node …"). */
export const OB1_EVIDENCE_MCA: Array<[string, string]> = [['btl_base_verbose', '100']];

/** The evidence switches for one run: UCX info lines always; Open MPI btl selection lines too. */
export function withEvidence(config: LaunchConfig, flavor: MpiFlavor, protoInfo: boolean): LaunchConfig {
	return {
		...config,
		env: [...evidenceEnv(protoInfo), ...config.env],
		mca: flavor === 'openmpi' ? [...OB1_EVIDENCE_MCA, ...config.mca] : config.mca,
	};
}

/** Open MPI: choose pml ucx with every transport/device allowed (Debian disables pml ucx by default). */
export const PML_UCX_MCA: Array<[string, string]> = [['pml', 'ucx'], ['pml_ucx_tls', 'any'], ['pml_ucx_devices', 'any']];
