/** A CliIo that keeps what a subcommand writes (for the CLI unit tests; nothing reaches the terminal). */
import type { CliIo } from '../../../extension/cli/io';

/** The captured output next to the io. */
export interface CapturedIo extends CliIo {
	out: string;
	err: string;
}

/** A fresh CliIo writing into `out` / `err`, in `cwd`, with a signal that `abort()` of `controller` fires. */
export function captureIo(cwd = process.cwd(), controller = new AbortController()): CapturedIo {
	const io: CapturedIo = {
		out: '', err: '', cwd, signal: controller.signal,
		stdout(t: string) { io.out += t; },
		stderr(t: string) { io.err += t; },
	};
	return io;
}
