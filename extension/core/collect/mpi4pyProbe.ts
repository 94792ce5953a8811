/**
 * The mpi4py probe: which mpi4py a Python interpreter imports, what it would ask MPI_Init_thread for, and which MPI
 * library its extension module loads (raw outputs `mpi4py` and `ldd:<MPI module>`, parsers/programFacts.ts). Read by
 * the rule mpi4py-thread-multiple-ucx-no-mt. Run by `inspect` (python3 on PATH) and by the guard for a Python program
 * (the command's own interpreter, with the environment the ranks get). Never through a shell: the code is one `-c`
 * argument. `mpi4py.rc` is printed before `mpi4py.MPI` is imported (the import reads MPI4PY_RC_* into rc); the import
 * is made with rc.initialize = False, so MPI_Init is not called — MPI_Get_library_version may be called before it.
 */
import type { RawOutput } from '../../shared/report';
import type { Host } from '../host';
import type { ExecuteResult } from '../proc';

/** The probe's Python code (one `-c` argument). Prints `key=value` lines; exits 0 whatever it finds. */
export const MPI4PY_PROBE = [
	'import sys',
	'print("python=" + sys.executable)',
	'try:',
	'    import mpi4py',
	'except Exception as e:',
	'    print("mpi4py=none"); print("error=" + type(e).__name__ + ": " + str(e)); sys.exit(0)',
	'print("mpi4py=" + str(getattr(mpi4py, "__version__", "?")))',
	'rc = getattr(mpi4py, "rc", None)',
	'print("rc.threads=" + str(getattr(rc, "threads", "")))',
	'print("rc.thread_level=" + str(getattr(rc, "thread_level", "")))',
	'try:',
	'    print("config=" + repr(mpi4py.get_config()).replace("\\n", " "))',
	'except Exception as e:',
	'    print("config=")',
	'try:',
	'    import importlib.util',
	'    s = importlib.util.find_spec("mpi4py.MPI")',
	'    print("mpi_module=" + ((s and s.origin) or ""))',
	'except Exception as e:',
	'    print("mpi_module=")',
	'try:',
	'    rc.initialize = False; rc.finalize = False',
	'    from mpi4py import MPI',
	// Open MPI's string ends in a NUL (its length counts it): dropped, so the line is text.
	'    print("library_version=" + MPI.Get_library_version().replace("\\x00", "").strip().splitlines()[0])',
	'except Exception as e:',
	'    print("library_version="); print("error=" + type(e).__name__ + ": " + str(e))',
].join('\n');

function toRaw(id: string, command: string[], r: ExecuteResult): RawOutput {
	return { id, command, exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr, durationMs: r.durationMs, ...(r.error !== undefined ? { error: r.error } : {}), ...(r.timedOut ? { timedOut: true } : {}) };
}

/**
 * Run the probe with `python` (a path or a name on the host's PATH) and `ldd` its MPI module. A missing interpreter
 * is a raw output with error "not found" (an optional tool: no finding).
 */
export async function runMpi4pyProbe(host: Host, python: string, opts: { timeoutMs: number; signal?: AbortSignal; env?: Record<string, string> }): Promise<RawOutput[]> {
	const exe = python.includes('/') ? python : (await host.which(python));
	if (!exe) { return [{ id: 'mpi4py', command: [python, '-c', '<mpi4py probe>'], exitCode: null, stdout: '', stderr: '', durationMs: 0, error: 'not found' }]; }
	const run = (argv: string[], env?: Record<string, string>): Promise<ExecuteResult> =>
		host.run(argv, { timeoutMs: Math.min(opts.timeoutMs, 30_000), signal: opts.signal, ...(env ? { env } : {}), maxOutputBytes: 1024 * 1024 });
	const probe = toRaw('mpi4py', [exe, '-c', MPI4PY_PROBE], await run([exe, '-c', MPI4PY_PROBE], opts.env));
	const out: RawOutput[] = [probe];
	const mod = /^mpi_module=(\/\S+)$/m.exec(probe.stdout)?.[1];
	if (mod) { out.push(toRaw(`ldd:${mod}`, ['ldd', mod], await run(['ldd', mod]))); }
	return out;
}
