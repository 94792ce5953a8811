/**
 * Saved maps too big for one string (issue 36). A 16 384-rank map measured in rounds has two million pairs: about
 * 1 GB of JSON, past V8's longest string (2^29 − 24 characters, ~512 MiB), so `JSON.parse(readFileSync(f, 'utf8'))`
 * cannot open it and `JSON.stringify(doc)` cannot write it. Read: files up to STREAM_ABOVE_BYTES go the ordinary way
 * (mapFile.ts: map documents, device results, guard results); bigger ones are scanned byte by byte and the top-level
 * `pairs` array is parsed in slices of whole elements, everything else as one small document. Write: the header, then
 * the pairs in slices, to a temporary file renamed over the target (whole or not at all, as core/fileWrite.ts).
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { MapDocument, MapPair } from '../../shared/mapSchema';
import { loadMapText, loadMapValue, type LoadedMap } from './mapFile';

/** Files bigger than this are read in slices (well below V8's string limit; the ordinary path needs the text twice). */
export const STREAM_ABOVE_BYTES = 256 * 1024 * 1024;
/** About how many bytes of pairs one JSON.parse call takes. */
const SLICE_BYTES = 8 * 1024 * 1024;

const QUOTE = 0x22, BACKSLASH = 0x5c, OPEN_OBJ = 0x7b, CLOSE_OBJ = 0x7d, OPEN_ARR = 0x5b, CLOSE_ARR = 0x5d, COLON = 0x3a;

/**
 * Parses one top-level JSON object fed in chunks, keeping its `pairs` array out of the one big string: the rest is
 * collected as text (with `"pairs": []`), the pairs parsed slice by slice as whole elements arrive.
 */
export class SlicedMapParser {
	private _depth = 0;
	private _inString = false;
	private _escape = false;
	/** Bytes of the current string at depth 1 (object keys of the top level). */
	private _key: number[] | null = null;
	private _lastKey = '';
	private _awaitValueOf: string | null = null;
	private _inPairs = false;
	private readonly _head: Buffer[] = [];
	/** Pairs bytes not yet parsed, and where the last complete element of them ends. */
	private _slice: Buffer[] = [];
	private _sliceBytes = 0;
	private readonly _pairs: MapPair[] = [];

	/** `sliceBytes`: about how many bytes of pairs one JSON.parse call takes. */
	constructor(private readonly _sliceMax = SLICE_BYTES) {}

	/** Feed the next chunk of the file. Throws on malformed JSON in a slice. */
	push(chunk: Buffer): void {
		let from = 0;
		let i = 0;
		const n = chunk.length;
		while (i < n) {
			if (this._inString) {
				// Skip to the closing quote natively (indexOf), then count the backslashes before it.
				if (this._escape) { this._escape = false; i++; continue; }
				const q = chunk.indexOf(QUOTE, i);
				const end = q < 0 ? n : q;
				let back = 0;
				for (let k = end - 1; k >= i && chunk[k] === BACKSLASH; k--) { back++; }
				if (this._key && this._key.length < 256) { this._key.push(...chunk.subarray(i, Math.min(end, i + 256))); }
				if (q < 0) { this._escape = back % 2 === 1; i = n; break; }
				if (back % 2 === 1) { if (this._key) { this._key.push(QUOTE); } i = q + 1; continue; }
				this._inString = false;
				if (this._key) { this._lastKey = Buffer.from(this._key).toString('utf8'); this._key = null; }
				i = q + 1;
				continue;
			}
			const c = chunk[i];
			if (c === QUOTE) {
				this._inString = true;
				if (this._depth === 1 && !this._inPairs) { this._key = []; }
			} else if (c === COLON) {
				if (this._depth === 1) { this._awaitValueOf = this._lastKey; }
			} else if (c === OPEN_OBJ || c === OPEN_ARR) {
				this._depth++;
				if (this._depth === 2 && c === OPEN_ARR && this._awaitValueOf === 'pairs') {
					// The pairs array: the head keeps "[", its elements go to slices until the matching "]".
					this._head.push(chunk.subarray(from, i + 1));
					from = i + 1;
					this._inPairs = true;
				}
				this._awaitValueOf = null;
			} else if (c === CLOSE_OBJ || c === CLOSE_ARR) {
				this._depth--;
				if (this._inPairs && this._depth === 2 && c === CLOSE_OBJ) {
					// A pair's object ended: parse the slice when it is big enough.
					this._slice.push(chunk.subarray(from, i + 1));
					this._sliceBytes += i + 1 - from;
					from = i + 1;
					if (this._sliceBytes >= this._sliceMax) { this._flush(); }
				} else if (this._inPairs && this._depth === 1) {
					// The end of the pairs array: whatever lies between the last element and "]" is commas and blanks.
					this._flush();
					this._inPairs = false;
					from = i;
				}
			}
			i++;
		}
		const rest = chunk.subarray(from);
		if (this._inPairs) { this._slice.push(rest); this._sliceBytes += rest.length; } else { this._head.push(rest); }
	}

	/** The whole value (the top-level object with its pairs). Throws on malformed JSON. */
	finish(): unknown {
		if (this._inPairs || this._depth !== 0) { throw new Error('the file ends inside the document (cut short?)'); }
		const head: unknown = JSON.parse(Buffer.concat(this._head).toString('utf8'));
		if (typeof head === 'object' && head !== null && Array.isArray((head as { pairs?: unknown }).pairs)) {
			(head as { pairs: MapPair[] }).pairs = this._pairs;
		}
		return head;
	}

	private _flush(): void {
		if (this._slice.length === 0) { return; }
		// The slice starts after "[" or after a complete element (so maybe with a comma) and ends with a complete element.
		const text = Buffer.concat(this._slice).toString('utf8').replace(/^[\s,]+/, '');
		this._slice = [];
		this._sliceBytes = 0;
		if (text.trim() === '') { return; }
		const list = JSON.parse(`[${text}]`) as MapPair[];
		for (const p of list) { this._pairs.push(p); }
	}
}

/**
 * Read a saved map of any size (what mapFile.ts recognises). `onProgress` gets bytes read and the file size.
 * Rejects only when the file cannot be read; a file that is no map is `invalid`.
 */
export async function readMapFile(file: string, onProgress?: (done: number, total: number) => void, streamAbove = STREAM_ABOVE_BYTES): Promise<LoadedMap> {
	const size = (await fs.promises.stat(file)).size;
	if (size <= streamAbove) { return loadMapText(await fs.promises.readFile(file, 'utf8')); }
	const parser = new SlicedMapParser(Math.max(1024, Math.min(SLICE_BYTES, streamAbove)));
	let done = 0;
	try {
		for await (const chunk of fs.createReadStream(file, { highWaterMark: 4 * 1024 * 1024 })) {
			parser.push(chunk as Buffer);
			done += (chunk as Buffer).length;
			onProgress?.(done, size);
		}
		return loadMapValue(parser.finish());
	} catch (e) {
		if ((e as NodeJS.ErrnoException).code !== undefined) { throw e; }
		const reason = e instanceof Error ? e.message : String(e);
		return { kind: 'invalid', error: `not JSON: ${reason}`, reason };
	}
}

/**
 * The document as JSON text in pieces: the header (every key but `pairs`), then the pairs, `perPiece` at a time — never
 * one string of the whole (past V8's longest string at 16 384 ranks). `oneLine`: no newline anywhere (a JSON line).
 */
export function* mapJsonPieces(doc: MapDocument, opts: { perPiece?: number; oneLine?: boolean } = {}): Generator<string> {
	const perPiece = opts.perPiece ?? 20000;
	const nl = opts.oneLine ? '' : '\n';
	const { pairs, ...head } = doc;
	const headText = opts.oneLine ? JSON.stringify(head) : JSON.stringify(head, null, 1);
	yield `${headText.slice(0, headText.lastIndexOf('}')).trimEnd()}${Object.keys(head).length > 0 ? ',' : ''}${nl}${opts.oneLine ? '' : ' '}"pairs":${opts.oneLine ? '' : ' '}[`;
	for (let i = 0; i < pairs.length; i += perPiece) {
		yield `${i === 0 ? nl : `,${nl}`}${pairs.slice(i, i + perPiece).map(p => JSON.stringify(p)).join(`,${nl}`)}`;
	}
	yield opts.oneLine ? ']}\n' : '\n ]\n}\n';
}

function tempName(file: string): string {
	return path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}-${randomBytes(3).toString('hex')}.tmp`);
}

/** Write a map document of any size, whole or not at all (temporary file, fsync, rename). Returns the bytes written. */
export async function writeMapFile(file: string, doc: MapDocument): Promise<number> {
	const tmp = tempName(file);
	let bytes = 0;
	try {
		const fh = await fs.promises.open(tmp, 'wx', 0o644);
		try {
			for (const piece of mapJsonPieces(doc)) {
				const b = Buffer.from(piece, 'utf8');
				await fh.write(b);
				bytes += b.length;
			}
			await fh.sync();
		} finally {
			await fh.close();
		}
		await fs.promises.rename(tmp, file);
		return bytes;
	} catch (e) {
		await fs.promises.unlink(tmp).catch(() => undefined);
		throw e;
	}
}

/** writeMapFile for a command-line process (nothing else to run meanwhile): the same file, written synchronously. */
export function writeMapFileSync(file: string, doc: MapDocument): number {
	const tmp = tempName(file);
	let bytes = 0;
	try {
		const fd = fs.openSync(tmp, 'wx', 0o644);
		try {
			for (const piece of mapJsonPieces(doc)) { bytes += fs.writeSync(fd, piece); }
			fs.fsyncSync(fd);
		} finally {
			fs.closeSync(fd);
		}
		fs.renameSync(tmp, file);
		return bytes;
	} catch (e) {
		try { fs.unlinkSync(tmp); } catch { /* not there */ }
		throw e;
	}
}
