/**
 * Saved maps of any size (extension/core/map/mapFileStream.ts): the sliced reader gives what JSON.parse gives, on
 * the real fixtures fed in chunks of 1 to 4 096 bytes with slices of a few hundred bytes (so every element and
 * string crosses chunk and slice boundaries), on text built to trip a scanner (brackets and quotes inside strings,
 * escapes, non-ASCII, a nested "pairs" key), and through readMapFile forced onto the streamed path; the writer's
 * file reads back to the same document whole, and a file cut short is refused. The 16 384-rank round trip (~1 GB)
 * runs in scripts/benchMap.mjs (docs/benchmarks-map.md).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadMapText } from '../../extension/core/map/mapFile';
import { mapJsonPieces, readMapFile, SlicedMapParser, writeMapFile, writeMapFileSync } from '../../extension/core/map/mapFileStream';
import type { MapDocument } from '../../extension/shared/mapSchema';
import { prng } from './prng';

const FIXTURES = path.resolve(process.cwd(), 'test-fixtures', 'map');

function sliced(text: string, chunk: (i: number) => number, sliceBytes: number): unknown {
	const bytes = Buffer.from(text, 'utf8');
	const p = new SlicedMapParser(sliceBytes);
	for (let at = 0, i = 0; at < bytes.length; i++) {
		const n = Math.max(1, chunk(i));
		p.push(bytes.subarray(at, at + n));
		at += n;
	}
	return p.finish();
}

describe('saved maps of any size (sliced reader, piecewise writer)', () => {
	let tmp = '';
	beforeEach(() => { tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-mapfile-')); });
	afterEach(() => { fs.rmSync(tmp, { recursive: true, force: true }); });

	it('equals JSON.parse on the real fixtures, in chunks of 1 to 4 096 bytes and slices of 300 bytes', () => {
		const rnd = prng(11);
		for (const f of ['map-4-openmpi-vader.json', 'map-4-openmpi-tcp.json', 'slurm-lab-map-2026-12-02.json', 'h200-testbed-map-2026-12-02.json', 'map-2-openmpi-bind-core-affinity.json']) {
			const text = fs.readFileSync(path.join(FIXTURES, f), 'utf8');
			for (const size of [1, 7, 4096]) {
				assert.deepEqual(sliced(text, () => (size === 7 ? 1 + Math.floor(rnd() * 13) : size), 300), JSON.parse(text), `${f}, chunks of ${size}`);
			}
		}
	});

	it('strings with brackets, braces, quotes, escapes and non-ASCII; a nested "pairs"; an empty pairs array', () => {
		const nasty = {
			schema: 'gpumpi.map/1', note: 'a "pairs": [ { ] } \\" \\\\ 🚀 ünïcödé', nested: { pairs: [{ a: 1 }], '"pairs"': '[' },
			pairs: [{ a: 0, b: 1, evidence: ['}]', '"{[', 'tab\there', 'back\\slash\\'], reason: '\u0000 ctl' }, { a: 2, b: 3, evidence: [], reason: '' }],
			after: [1, 2, { x: ']' }],
		};
		const text = JSON.stringify(nasty, null, 1);
		for (const size of [1, 2, 3, 5, 64]) { assert.deepEqual(sliced(text, () => size, 20), nasty, `chunks of ${size}`); }
		assert.deepEqual(sliced(JSON.stringify({ schema: 'x', pairs: [], z: 1 }), () => 1, 10), { schema: 'x', pairs: [], z: 1 });
		assert.throws(() => sliced(text.slice(0, text.length - 40), () => 64, 20), /cut short|JSON/);
	});

	it('readMapFile on the streamed path gives what the ordinary path gives (1 024-rank fixture); a cut file is invalid', async () => {
		const file = path.join(FIXTURES, 'map-1024.json');
		const whole = loadMapText(fs.readFileSync(file, 'utf8'));
		let progress = 0;
		const streamed = await readMapFile(file, done => { progress = done; }, 0);
		assert.equal(streamed.kind, 'map');
		assert.deepEqual(streamed, whole);
		assert.equal(progress, fs.statSync(file).size);
		const cut = path.join(tmp, 'cut.json');
		fs.writeFileSync(cut, fs.readFileSync(file).subarray(0, 3_000_000));
		const r = await readMapFile(cut, undefined, 0);
		assert.equal(r.kind, 'invalid');
		assert.match(r.kind === 'invalid' ? r.error : '', /^not JSON: the file ends inside the document/);
		await assert.rejects(readMapFile(path.join(tmp, 'missing.json')), /ENOENT/);
	});

	it('writeMapFile: the same document back, by either reader; no temporary file left; pieces are valid JSON together', async () => {
		const doc = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'map-1024.json'), 'utf8')) as MapDocument;
		const file = path.join(tmp, 'out.json');
		const bytes = await writeMapFile(file, doc);
		assert.equal(bytes, fs.statSync(file).size);
		assert.deepEqual(fs.readdirSync(tmp), ['out.json']);
		const back = await readMapFile(file, undefined, 0);
		assert.equal(back.kind, 'map');
		assert.deepEqual(back.kind === 'map' ? back.doc : null, doc);
		assert.deepEqual(JSON.parse(fs.readFileSync(file, 'utf8')), doc);
		assert.deepEqual(JSON.parse([...mapJsonPieces({ ...doc, pairs: [] })].join('')), { ...doc, pairs: [] });
		await assert.rejects(writeMapFile(path.join(tmp, 'no-such-dir', 'x.json'), doc), /ENOENT/);
	});

	it('writeMapFileSync (the CLI\'s --out) writes the same bytes; one-line pieces (--json-lines) are one JSON line', () => {
		const doc = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'map-1024.json'), 'utf8')) as MapDocument;
		const file = path.join(tmp, 'sync.json');
		const bytes = writeMapFileSync(file, doc);
		assert.equal(bytes, fs.statSync(file).size);
		assert.equal(fs.readFileSync(file, 'utf8'), [...mapJsonPieces(doc)].join(''));
		assert.deepEqual(fs.readdirSync(tmp).filter(f => f.startsWith('.')), [], 'no temporary file left');
		const pieces = [...mapJsonPieces(doc, { oneLine: true, perPiece: 1000 })];
		assert.ok(pieces.length > 10, 'in pieces');
		const line = pieces.join('');
		assert.equal(line.indexOf('\n'), line.length - 1, 'one line');
		assert.deepEqual(JSON.parse(line), doc);
		assert.throws(() => writeMapFileSync(path.join(tmp, 'no-such-dir', 'x.json'), doc), /ENOENT/);
	});
});
