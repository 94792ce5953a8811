/**
 * Reader of the one JSON document an engine command prints for the product, inside output that also carries other
 * ranks' lines, UCX / PMIx log lines, launcher prefixes (`srun --label`'s "0: ") and NUL bytes. The engine frames it
 * (native/common/docFrame.hh, docs/repro-schema.md):
 *
 *   @@GPUMPI-JSON-BEGIN@@ v2 id=<8 hex> bytes=<N> chunks=<K> crc32=<8 hex> copies=3
 *   @@GPUMPI-JSON@@ <id> <i> <K> <N> <crc32 of all> <len> <crc32 of chunk> <payload>    (every chunk 3 times)
 *   @@GPUMPI-JSON-END@@ v2 id=<id>
 *
 * Every chunk is checked (its byte length and CRC-32, then the whole document's); a copy of a chunk that fails is
 * skipped when an intact copy exists. Chunk lines carry the document's shape, so the begin and end lines (which a
 * launcher may cut like any other) are not needed. A damaged or incomplete document is an error that names the chunk and its byte
 * range, never a silent loss (a chunk counts as damaged only when no copy of it is intact). Output of older engines (the document alone on a line between `@@GPUMPI-JSON-BEGIN@@`
 * and `@@GPUMPI-JSON-END@@`) is still read. Pure; never throws.
 */
import { JSON_BEGIN_MARKER, JSON_CHUNK_MARKER, JSON_END_MARKER } from '../../shared/reproSchema';

/** The document, or why there is none. */
export type ExtractedDocument = { json: unknown } | { error: string };

/** The document's shape, from its begin line or any intact chunk line. */
export interface Shape { bytes: number; chunks: number; crc: number }
interface Frame { shape?: Shape; chunks: Map<number, Buffer>; damaged: Map<number, string>; endLine: number; firstLine: number }

const HEADER = /^v2 id=([0-9a-f]{8}) bytes=(\d{1,10}) chunks=(\d{1,7}) crc32=([0-9a-f]{8})/;
const CHUNK = /^([0-9a-f]{8}) (\d{1,7}) (\d{1,7}) (\d{1,10}) ([0-9a-f]{8}) (\d{1,6}) ([0-9a-f]{8}) /;
const END = /^v2 id=([0-9a-f]{8})/;

let crcTable: Uint32Array | undefined;

/** True for a line that carries part of a framed document (a chunk, its header or end line) or a legacy marker. */
export function isFrameLine(l: string): boolean {
	return l.includes(JSON_CHUNK_MARKER) || l.includes(JSON_BEGIN_MARKER) || l.includes(JSON_END_MARKER);
}

/** CRC-32 (IEEE 802.3, zlib's), the engine's checksum; `previous`: the CRC of the bytes before `data` (a document read in parts). */
export function crc32(data: Uint8Array, previous = 0): number {
	if (!crcTable) {
		crcTable = new Uint32Array(256);
		for (let i = 0; i < 256; i++) {
			let c = i;
			for (let k = 0; k < 8; k++) { c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1; }
			crcTable[i] = c >>> 0;
		}
	}
	const table = crcTable;
	let c = (previous ^ 0xffffffff) >>> 0;
	for (let i = 0; i < data.length; i++) { c = table[(c ^ data[i]) & 0xff] ^ (c >>> 8); }
	return (c ^ 0xffffffff) >>> 0;
}

function hex8(n: number): string { return n.toString(16).padStart(8, '0'); }

function splitLines(text: string): string[] {
	return text.split(/\r\n|\n|\r/).slice(0, 400_000);
}

/** Show a damaged line without its control characters, cut. */
function showLine(line: string): string {
	// eslint-disable-next-line no-control-regex
	const s = line.replace(/[\u0000-\u001f\u007f]/g, '\uFFFD');
	return JSON.stringify(s.length > 160 ? `${s.slice(0, 160)}…` : s);
}

/** JSON.parse with the failing byte named and shown. */
function parseJson(text: string, what: string): ExtractedDocument {
	try {
		return { json: JSON.parse(text) as unknown };
	} catch (e) {
		const msg = e instanceof Error ? e.message : String(e);
		const pos = /position (\d+)/.exec(msg);
		const at = pos ? Number(pos[1]) : -1;
		const context = at >= 0 ? `; around byte ${at}: ${showLine(text.slice(Math.max(0, at - 40), at + 40))}` : '';
		return { error: `${what} does not parse as JSON: ${msg}${context}` };
	}
}

/** One chunk line: the chunk checked against its length and CRC-32 (`chunk`), or why it is damaged. */
export type ChunkLine =
	| { id: string; index: number; shape: Shape; chunk: Buffer }
	| { id: string; index: number; damaged: string };

/** Read a chunk line (anywhere in `line`: launcher prefixes are fine); null when it is none. */
export function readChunkLine(line: string): ChunkLine | null {
	const at = line.indexOf(`${JSON_CHUNK_MARKER} `);
	if (at < 0) { return null; }
	const rest = line.slice(at + JSON_CHUNK_MARKER.length + 1);
	const m = CHUNK.exec(rest);
	if (!m) { return null; }
	const index = Number(m[2]);
	const len = Number(m[6]);
	const payload = Buffer.from(rest.slice(m[0].length), 'utf8');
	// A line may carry more than the chunk (another process's text written before our newline): keep `len` bytes.
	const chunk = payload.subarray(0, len);
	if (chunk.length === len && crc32(chunk) === parseInt(m[7], 16)) {
		return { id: m[1], index, shape: { chunks: Number(m[3]), bytes: Number(m[4]), crc: parseInt(m[5], 16) }, chunk: Buffer.from(chunk) };
	}
	return { id: m[1], index, damaged: chunk.length < len ? `${chunk.length} of its ${len} bytes arrived` : `its CRC-32 is ${hex8(crc32(chunk))}, the engine wrote ${m[7]}` };
}

/** The framed documents of the output, by id. */
function collectFrames(all: string[]): Map<string, Frame> {
	const frames = new Map<string, Frame>();
	const frame = (id: string, line: number): Frame => {
		let f = frames.get(id);
		if (!f) { f = { chunks: new Map(), damaged: new Map(), endLine: -1, firstLine: line }; frames.set(id, f); }
		return f;
	};
	for (let n = 0; n < all.length; n++) {
		const l = all[n];
		if (!l.includes('@@GPUMPI-JSON')) { continue; }
		if (l.includes(`${JSON_CHUNK_MARKER} `)) {
			const c = readChunkLine(l);
			if (!c) { continue; }
			const f = frame(c.id, n);
			if ('chunk' in c) {
				f.shape ??= c.shape;
				f.chunks.set(c.index, c.chunk);
				f.damaged.delete(c.index);
			} else if (!f.chunks.has(c.index) && !f.damaged.has(c.index)) {
				f.damaged.set(c.index, `${c.damaged} (output line ${n + 1}: ${showLine(l)})`);
			}
			continue;
		}
		let at = l.indexOf(`${JSON_BEGIN_MARKER} `);
		if (at >= 0) {
			const m = HEADER.exec(l.slice(at + JSON_BEGIN_MARKER.length + 1));
			if (m) { frame(m[1], n).shape ??= { bytes: Number(m[2]), chunks: Number(m[3]), crc: parseInt(m[4], 16) }; }
			continue;
		}
		at = l.indexOf(`${JSON_END_MARKER} `);
		if (at >= 0) {
			const m = END.exec(l.slice(at + JSON_END_MARKER.length + 1));
			if (m) { frame(m[1], n).endLine = n; }
		}
	}
	return frames;
}

/** Assemble and check one framed document. */
function assemble(id: string, f: Frame): ExtractedDocument {
	const h = f.shape;
	if (!h) {
		const first = [...f.damaged.entries()][0];
		return { error: `document ${id}: no intact line of it arrived${first ? `; chunk ${first[0] + 1}: ${first[1]}` : ''}` };
	}
	const parts: Buffer[] = [];
	let offset = 0;
	for (let i = 0; i < h.chunks; i++) {
		const c = f.chunks.get(i);
		if (!c) {
			const where = `chunk ${i + 1} of ${h.chunks} (from byte ${offset} of ${h.bytes})`;
			const damage = f.damaged.get(i);
			if (damage) { return { error: `document ${id}: ${where} is damaged: ${damage}` }; }
			return { error: `document ${id}: ${where} is missing${f.endLine < 0 ? ' and so is the end line (output cut, or the engine was killed while writing it?)' : ''}` };
		}
		parts.push(c);
		offset += c.length;
	}
	const doc = Buffer.concat(parts);
	if (doc.length !== h.bytes) { return { error: `document ${id}: ${doc.length} bytes assembled, the engine announced ${h.bytes}` }; }
	const crc = crc32(doc);
	if (crc !== h.crc) { return { error: `document ${id}: the assembled document's CRC-32 is ${hex8(crc)}, the engine wrote ${hex8(h.crc)}` }; }
	return parseJson(doc.toString('utf8'), `document ${id}`);
}

/** Older engines: the document alone between two marker lines. */
function legacyDocument(all: string[]): ExtractedDocument | null {
	let end = -1;
	for (let i = all.length - 1; i >= 0; i--) { if (all[i].trim() === JSON_END_MARKER) { end = i; break; } }
	if (end < 0) { return all.some(l => l.trim() === JSON_BEGIN_MARKER) ? { error: 'JSON begin marker without end marker (output cut?)' } : null; }
	let begin = -1;
	for (let i = end - 1; i >= 0; i--) { if (all[i].trim() === JSON_BEGIN_MARKER) { begin = i; break; } }
	if (begin < 0) { return { error: 'JSON end marker without begin marker' }; }
	return parseJson(all.slice(begin + 1, end).join('\n'), 'the text between the markers');
}

/**
 * The engine's document in `stdout`: the last framed document started, checked (an error when it is damaged or
 * incomplete, even if an earlier one was intact: the last one is the result); else a legacy marker-wrapped one.
 */
export function extractJsonDocument(stdout: string): ExtractedDocument {
	// NUL bytes (a rank's binary garbage) are no part of any document line.
	const all = splitLines(stdout.includes('\0') ? stdout.replace(/\0/g, '') : stdout);
	// The result is the last document the output started (a launcher that restarts a job prints a new one).
	let last: [string, Frame] | null = null;
	for (const entry of collectFrames(all)) { if (!last || entry[1].firstLine >= last[1].firstLine) { last = entry; } }
	if (last) { return assemble(last[0], last[1]); }
	return legacyDocument(all) ?? { error: 'no JSON document in the output' };
}

/**
 * Every intact framed document of the output, in the order they started (several when a launcher started separate
 * one-rank jobs: see singletonStart in extension/core/launch/runLaunch.ts). Damaged ones are left out.
 */
export function extractJsonDocuments(stdout: string): unknown[] {
	const all = splitLines(stdout.includes('\0') ? stdout.replace(/\0/g, '') : stdout);
	return [...collectFrames(all).entries()].sort((a, b) => a[1].firstLine - b[1].firstLine)
		.map(([id, f]) => assemble(id, f)).filter((r): r is { json: unknown } => 'json' in r).map(r => r.json);
}
