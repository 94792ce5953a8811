/**
 * `gpumpi-doctor collect [--out DIR]` (inspect this host and write an offline bundle) and
 * `gpumpi-doctor analyze <bundle-dir> [--json]` (analyse a bundle from anywhere, printing findings exactly as
 * `inspect` does). Both return the process exit code: 0 done, 2 usage error, 3 the bundle could not be written/read.
 */
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { BundleError, reportFromBundle, writeBundle } from '../core/bundle';
import type { Report } from '../shared/report';
import { UsageError } from './launchArgs';
import { renderReportText, terminalSafe } from './textReport';

/** Where the subcommands write. */
export interface BundleIo {
	stdout(text: string): void;
	stderr(text: string): void;
	cwd: string;
}

/** Which machine `collect` inspects: this one, or an ssh host. */
export interface CollectWhere {
	host?: string;
	setup?: string;
	sshConfig?: string;
}

/** What `collect` needs: the inspection (gpumpiDoctor wires it to inspectHost on this machine or an ssh host). */
export interface CollectDeps {
	inspect: (where: CollectWhere) => Promise<Report>;
	io?: BundleIo;
}

const processIo: BundleIo = {
	stdout: (t) => { process.stdout.write(t); },
	stderr: (t) => { process.stderr.write(t); },
	cwd: process.cwd(),
};

export const COLLECT_USAGE = `Usage: gpumpi-doctor collect [--out DIR] [--host H [--setup LINE] [--ssh-config FILE]]
  Inspect this host (or the ssh host H) and write every raw tool output into an offline bundle (a directory; see
  docs/bundle.md).
  --out DIR         bundle directory (default ./gpumpi-bundle-<host>-<time>); must be new, empty or an older bundle
  --host H          inspect the ssh host H instead (alias or user@host; the engine is deployed and built there)
  --setup LINE      shell line run on H before every command (e.g. "module load openmpi")
  --ssh-config FILE ssh client configuration (default ~/.ssh/config)
`;

export const ANALYZE_USAGE = `Usage: gpumpi-doctor analyze <bundle-dir> [--json]
  Analyse a bundle written by "gpumpi-doctor collect" (on any machine) and print the findings.
  --json      print the report as JSON instead of text
`;

function errorText(e: unknown): string { return e instanceof Error ? e.message : String(e); }

function parse(argv: readonly string[], options: { [k: string]: { type: 'string' | 'boolean' } }): { values: Record<string, string | boolean | undefined>; positionals: string[] } | string {
	try {
		const r = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
		return { values: r.values as Record<string, string | boolean | undefined>, positionals: r.positionals };
	} catch (e) { return errorText(e); }
}

/** A file-name-safe stamp for the default bundle directory. */
function defaultDir(report: Report, cwd: string): string {
	const host = (report.summary.hostname || report.host.label || 'host').replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40);
	const stamp = report.createdAt.replace(/[^0-9T]/g, '').slice(0, 15);
	return path.join(cwd, `gpumpi-bundle-${host}-${stamp}`);
}

/** `gpumpi-doctor collect [--out DIR]`. */
export async function collectMain(argv: readonly string[], deps: CollectDeps): Promise<number> {
	const io = deps.io ?? processIo;
	if (argv.includes('--help') || argv.includes('-h')) { io.stdout(COLLECT_USAGE); return 0; }
	const p = parse(argv, { out: { type: 'string' }, host: { type: 'string' }, setup: { type: 'string' }, 'ssh-config': { type: 'string' } });
	if (typeof p === 'string') { io.stderr(`gpumpi-doctor collect: ${p}\n\n${COLLECT_USAGE}`); return 2; }
	if (p.positionals.length > 0) { io.stderr(`gpumpi-doctor collect: unexpected argument ${JSON.stringify(p.positionals[0])}\n\n${COLLECT_USAGE}`); return 2; }
	if (p.values.out === '') { io.stderr(`gpumpi-doctor collect: --out needs a directory\n\n${COLLECT_USAGE}`); return 2; }
	let report: Report;
	const str = (v: string | boolean | undefined): string | undefined => typeof v === 'string' ? v : undefined;
	try {
		report = await deps.inspect({ host: str(p.values.host), setup: str(p.values.setup), sshConfig: str(p.values['ssh-config']) });
	} catch (e) {
		if (e instanceof UsageError) { io.stderr(`gpumpi-doctor collect: ${e.message}\n\n${COLLECT_USAGE}`); return 2; }
		io.stderr(`gpumpi-doctor collect: the inspection failed: ${errorText(e)}\n`);
		return 3;
	}
	const dir = typeof p.values.out === 'string' ? path.resolve(io.cwd, p.values.out) : defaultDir(report, io.cwd);
	try {
		const m = await writeBundle(dir, report);
		io.stdout(`Bundle written to ${dir} (${m.raw.length} raw outputs).\nAnalyse it on any machine with: gpumpi-doctor analyze ${dir}\n`);
		return 0;
	} catch (e) {
		io.stderr(`gpumpi-doctor collect: cannot write the bundle: ${errorText(e)}\n`);
		return 3;
	}
}

/** Build the report for a bundle (analysis re-run here, with this version's rules). */

/** `gpumpi-doctor analyze <bundle-dir> [--json]`. */
export async function analyzeMain(argv: readonly string[], io: BundleIo = processIo): Promise<number> {
	if (argv.includes('--help') || argv.includes('-h')) { io.stdout(ANALYZE_USAGE); return 0; }
	const p = parse(argv, { json: { type: 'boolean' } });
	if (typeof p === 'string') { io.stderr(`gpumpi-doctor analyze: ${p}\n\n${ANALYZE_USAGE}`); return 2; }
	if (p.positionals.length !== 1) { io.stderr(`gpumpi-doctor analyze: give exactly one bundle directory\n\n${ANALYZE_USAGE}`); return 2; }
	const dir = path.resolve(io.cwd, p.positionals[0]);
	let report: Report;
	try { report = await reportFromBundle(dir); } catch (e) {
		io.stderr(`gpumpi-doctor analyze: ${e instanceof BundleError ? 'invalid bundle: ' : ''}${terminalSafe(errorText(e))}\n`);
		return 3;
	}
	io.stdout(p.values.json ? JSON.stringify(report, null, 2) + '\n' : renderReportText(report));
	return 0;
}
