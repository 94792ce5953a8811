/**
 * The report an inspection produces: what the tools printed (raw), what was parsed from it (facts),
 * what the rules concluded (findings) and a summary for the panel header.
 * Shared by the extension host, the headless CLI, the HTML report and the webview (no vscode, no DOM here).
 */
import type { ProbeResult } from './addonTypes';
import type { EngineInspect } from './engineSchema';
import type { Headline } from './headline';

export const REPORT_SCHEMA = 'gpumpi-doctor.report/1';

/** One program run (or file read) during collection, kept verbatim so a user can see exactly what was seen. */
export interface RawOutput {
	/** Stable id, e.g. "ompi_info", "mpirun_version", "ucx_info", "nvidia_smi_topo", "mca_params:/etc/openmpi/openmpi-mca-params.conf", "env", "engine". */
	id: string;
	/** argv as run (no shell), or ["read", path] for a file. */
	command: string[];
	/** Exit code; null when the program could not be started, was killed or timed out. */
	exitCode: number | null;
	stdout: string;
	stderr: string;
	durationMs: number;
	/** Why the run failed to produce output: "not found", "timed out after 60 s", "killed by SIGSEGV"... */
	error?: string;
	timedOut?: boolean;
	/** Why the collector shaped the command as it did, e.g. "--allow-run-as-root added: running as uid 0 with Open MPI". */
	notes?: string[];
}

/** One quoted line that supports a finding. */
export interface Evidence {
	/** RawOutput id (or file path) the line came from. */
	source: string;
	/** The line exactly as seen (trimmed of the line terminator only). */
	line: string;
	/** 1-based line number in that output, when known. */
	lineNo?: number;
}

export type Severity = 'error' | 'warning' | 'info';

/** A concrete remedy. `command` is what the user copies: an env var, an MCA parameter, a command line. */
export interface Fix {
	text: string;
	command?: string;
}

/** A public source a finding rests on: an https URL or a section of a page shipped in docs/ (`docs/x.md#anchor`). */
export interface SourceRef {
	url: string;
	/** What the source shows, in a few words. */
	shows: string;
	/**
	 * The exact text it rests on, where the source is a file at a release tag (github.com/…/blob/<tag>/<path>):
	 * `npm run verify-sources` checks it is there (docs/verify-sources.json).
	 */
	quote?: string;
}

/** One diagnostic conclusion. */
export interface Finding {
	/** Rule id, e.g. "ompi-not-cuda-aware". */
	id: string;
	severity: Severity;
	title: string;
	message: string;
	evidence: Evidence[];
	fix?: Fix;
	/** Where the knowledge comes from, as text (the URLs of `sources`, space-separated, for rule findings). */
	source?: string;
	/** The public sources, each with what it shows (rule findings; rendered as links). */
	sources?: SourceRef[];
}

/** Tri-state answer with the reason. */
export type YesNoUnknown = 'yes' | 'no' | 'unknown';

/** What the panel header shows. */
export interface HostSummary {
	hostname: string;
	mpi: { label: string; cudaAware: YesNoUnknown; detail: string };
	ucx: { label: string; cuda: YesNoUnknown; detail: string };
	cuda: { label: string; driverVersion: string };
	gpus: { index: number; name: string; pciBusId: string; memoryMiB: number }[];
}

/** Which host was inspected. `kind` leaves room for SSH/Slurm hosts. */
export interface HostRef {
	id: string;
	label: string;
	kind: 'local' | 'ssh' | 'bundle';
}

/** The whole inspection result. */
export interface Report {
	schema: typeof REPORT_SCHEMA;
	tool: { name: string; version: string };
	createdAt: string;
	host: HostRef;
	summary: HostSummary;
	/** The one-line verdict the report opens with (shared/headline.ts); absent in reports written before it existed. */
	headline?: Headline;
	findings: Finding[];
	/** Parsed facts (see extension/core/facts.ts); typed loosely here so the webview needs no parser types. */
	facts: unknown;
	raw: RawOutput[];
	engine: EngineInspect | null;
	probe: ProbeResult | null;
	/** Milliseconds the whole inspection took. */
	elapsedMs: number;
}
