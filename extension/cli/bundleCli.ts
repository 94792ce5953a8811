/**
 * `gpumpi-doctor collect [--out DIR]` (inspect this host and write an offline bundle) and
 * `gpumpi-doctor analyze <bundle-dir> [--json]` (analyse a bundle from anywhere, printing findings exactly as
 * `inspect` does). Exit codes are the table of io.ts: 0 done, 2 usage error (before anything is inspected), 3 the
 * inspection failed or the bundle could not be written / read.
 */
import * as path from 'node:path';
import { BundleError, reportFromBundle, writeBundle } from '../core/bundle';
import type { Report } from '../shared/report';
import { UNREACHABLE_ID } from '../core/unreachable';
import { flag, helpText, option, parseArgv, text, withHelp } from './argv';
import { EXIT, runSubcommand, UsageError, type CliIo } from './io';
import { checkSshTarget, TARGET_OPTIONS } from './launchArgs';
import { renderReportText, terminalSafe } from './textReport';

/** Which machine `collect` inspects: this one, or an ssh host. */
export interface CollectWhere {
	host?: string;
	setup?: string;
	sshConfig?: string;
}

/** What `collect` needs: the inspection (gpumpiDoctor wires it to inspectHost on this machine or an ssh host). */
export interface CollectDeps {
	inspect: (where: CollectWhere) => Promise<Report>;
	io: CliIo;
}

/** The options of `collect`. */
export const COLLECT_OPTIONS = {
	out: option(text('DIR', { empty: 'a directory' }), 'bundle directory (default ./gpumpi-bundle-<host>-<time>); must be new, empty or an older bundle'),
	host: withHelp(TARGET_OPTIONS.host, 'inspect the ssh host H instead (alias or user@host; the engine is deployed and built there)'),
	setup: withHelp(TARGET_OPTIONS.setup, 'shell line run on H before every command (e.g. "module load openmpi")'),
	'ssh-config': withHelp(TARGET_OPTIONS['ssh-config'], 'ssh client configuration (default ~/.ssh/config)'),
};

export const COLLECT_USAGE = helpText(COLLECT_OPTIONS, {
	usage: 'gpumpi-doctor collect [--out DIR] [--host H [--setup LINE] [--ssh-config FILE]]',
	intro: 'Inspect this host (or the ssh host H) and write every raw tool output into an offline bundle (a directory; see docs/bundle.md).',
});

/** The options of `analyze`. */
export const ANALYZE_OPTIONS = {
	json: flag('print the report as JSON instead of text'),
};

export const ANALYZE_USAGE = helpText(ANALYZE_OPTIONS, {
	usage: 'gpumpi-doctor analyze <bundle-dir> [--json]',
	intro: 'Analyse a bundle written by "gpumpi-doctor collect" (on any machine) and print the findings.',
});

function errorText(e: unknown): string { return e instanceof Error ? e.message : String(e); }

/** `collect` argv → where to inspect and where to write; UsageError otherwise (an empty message: --help). Pure. */
export function parseCollectArgs(argv: readonly string[]): CollectWhere & { out?: string } {
	const { out, host, setup, 'ssh-config': sshConfig } = parseArgv(COLLECT_OPTIONS, argv).values;
	checkSshTarget(host, setup, sshConfig);
	return { out, host, setup, sshConfig };
}

/** `analyze` argv → the bundle directory and --json; UsageError otherwise (an empty message: --help). Pure. */
export function parseAnalyzeArgs(argv: readonly string[]): { dir: string; json: boolean } {
	const p = parseArgv(ANALYZE_OPTIONS, argv, { positionals: { max: 1, unexpected: () => 'give exactly one bundle directory' } });
	if (p.positionals.length !== 1 || p.positionals[0] === '') { throw new UsageError('give exactly one bundle directory'); }
	return { dir: p.positionals[0], json: p.values.json === true };
}

/** A file-name-safe stamp for the default bundle directory. */
function defaultDir(report: Report, cwd: string): string {
	const host = (report.summary.hostname || report.host.label || 'host').replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40);
	const stamp = report.createdAt.replace(/[^0-9T]/g, '').slice(0, 15);
	return path.join(cwd, `gpumpi-bundle-${host}-${stamp}`);
}

/** `gpumpi-doctor collect [--out DIR]`. Never rejects. */
export function collectMain(argv: readonly string[], deps: CollectDeps): Promise<number> {
	const { io } = deps;
	return runSubcommand('collect', COLLECT_USAGE, io, async () => {
		const { out, ...where } = parseCollectArgs(argv);
		let report: Report;
		try {
			report = await deps.inspect(where);
		} catch (e) {
			if (e instanceof UsageError) { throw e; }
			if (io.signal.aborted) { io.stderr('gpumpi-doctor collect: interrupted; the running tools were stopped and no bundle was written\n'); return EXIT.interrupted; }
			io.stderr(`gpumpi-doctor collect: the inspection failed: ${errorText(e)}\n`);
			return EXIT.failed;
		}
		if (io.signal.aborted) {
			// The tools were stopped part-way: such a bundle would pass for a whole inspection. Keep what was there.
			io.stderr('gpumpi-doctor collect: interrupted; the running tools were stopped and no bundle was written\n');
			return EXIT.interrupted;
		}
		const unreached = report.findings.find(f => f.id === UNREACHABLE_ID);
		if (unreached) {
			// A bundle of a host nobody looked at would hold nothing to analyse: say why, write none.
			io.stderr(`gpumpi-doctor collect: ${terminalSafe(unreached.message)}\n${unreached.evidence.map(e => `  ${terminalSafe(e.line)}\n`).join('')}no bundle written\n`);
			return EXIT.failed;
		}
		const dir = out !== undefined ? path.resolve(io.cwd, out) : defaultDir(report, io.cwd);
		try {
			const m = await writeBundle(dir, report);
			io.stdout(`Bundle written to ${dir} (${m.raw.length} raw outputs).\nAnalyse it on any machine with: gpumpi-doctor analyze ${dir}\n`);
			return EXIT.ok;
		} catch (e) {
			io.stderr(`gpumpi-doctor collect: ${/^cannot write/.test(errorText(e)) ? '' : 'cannot write the bundle: '}${errorText(e)}\n`);
			return EXIT.failed;
		}
	});
}

/** `gpumpi-doctor analyze <bundle-dir> [--json]`. Never rejects. */
export function analyzeMain(argv: readonly string[], io: CliIo): Promise<number> {
	return runSubcommand('analyze', ANALYZE_USAGE, io, async () => {
		const a = parseAnalyzeArgs(argv);
		let report: Report;
		try { report = await reportFromBundle(path.resolve(io.cwd, a.dir)); } catch (e) {
			io.stderr(`gpumpi-doctor analyze: ${e instanceof BundleError ? 'invalid bundle: ' : ''}${terminalSafe(errorText(e))}\n`);
			return EXIT.failed;
		}
		io.stdout(a.json ? JSON.stringify(report, null, 2) + '\n' : renderReportText(report));
		return EXIT.ok;
	});
}
