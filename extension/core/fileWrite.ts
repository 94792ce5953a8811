/**
 * Writing a result file so that a failure never leaves a truncated file that looks like a result, and never damages
 * the one already there: the text goes to a temporary file beside the target, then rename(2) puts it in place (atomic
 * within one file system). On any error (a full disk: ENOSPC) the temporary file is removed and the error thrown.
 * Measured in test/engine/faultsOutput.test.ts on a 64 KiB tmpfs: before this, `map --out` on a full disk left a
 * truncated map file (and had already emptied the earlier one).
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** Write `text` to `file` whole or not at all (throws the file system's error, e.g. ENOSPC). */
export function writeFileWhole(file: string, text: string): void {
	const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}-${randomBytes(3).toString('hex')}.tmp`);
	try {
		const fd = fs.openSync(tmp, 'wx', 0o644);
		try {
			fs.writeFileSync(fd, text);
			fs.fsyncSync(fd);
		} finally {
			fs.closeSync(fd);
		}
		fs.renameSync(tmp, file);
	} catch (e) {
		try { fs.unlinkSync(tmp); } catch { /* never created, or already renamed */ }
		throw e;
	}
}
