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

/** Write `text` (or bytes) to `file` whole or not at all (throws the file system's error, e.g. ENOSPC). */
export function writeFileWhole(file: string, text: string | Uint8Array): void {
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

/**
 * Replace the directory `dir` whole or not at all: `fill(staging)` writes the new contents into a fresh directory
 * beside `dir` (same file system), then rename(2) puts it in place; an existing `dir` (an older version) is first
 * renamed aside and removed only once the new one is in place (if the second rename fails it is put back). On any
 * error the staging directory is removed and the error thrown, with `dir` as it was. The only window is between the
 * two renames (microseconds): a crash there leaves the older version under its `.…old` name beside `dir`, not lost.
 * Where no directory can be made beside `dir` (its parent not writable), or an existing `dir` cannot be renamed (a
 * mount point: EBUSY), returns false without writing: the caller then writes in place.
 */
export async function replaceDirWhole(dir: string, fill: (staging: string) => Promise<void>): Promise<boolean> {
	const stem = path.join(path.dirname(dir), `.${path.basename(dir)}.${process.pid}-${randomBytes(3).toString('hex')}`);
	const staging = `${stem}.tmp`;
	try { await fs.promises.mkdir(staging); } catch (e) {
		const code = (e as NodeJS.ErrnoException).code;
		if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') { return false; }
		throw e;
	}
	try {
		await fill(staging);
		let aside: string | null = null;
		if (fs.existsSync(dir)) {
			aside = `${stem}.old`;
			try { await fs.promises.rename(dir, aside); } catch (e) {
				const code = (e as NodeJS.ErrnoException).code;
				if (code === 'EBUSY' || code === 'EXDEV' || code === 'EACCES' || code === 'EPERM') { await fs.promises.rm(staging, { recursive: true, force: true }); return false; }
				throw e;
			}
		}
		try { await fs.promises.rename(staging, dir); } catch (e) {
			if (aside) { await fs.promises.rename(aside, dir).catch(() => undefined); }
			throw e;
		}
		if (aside) { await fs.promises.rm(aside, { recursive: true, force: true }); }
		return true;
	} catch (e) {
		await fs.promises.rm(staging, { recursive: true, force: true }).catch(() => undefined);
		throw e;
	}
}
