/**
 * The framed-document reader (extension/core/parsers/framedDocument.ts) on a REAL captured engine output
 * (test-fixtures/engine/debian12-framed/, see its README): three ranks' UCX lines around a map document framed by
 * native/common/docFrame.cc. The capture is then damaged the ways launchers damage output (a line cut where another
 * rank's text lands, lines lost, bytes flipped, NUL bytes, `srun --label` prefixes, output cut short); each case says
 * what the reader must answer. The live counterpart (real mpirun with other ranks writing hostile lines while rank 0
 * prints) is test/engine/framing.test.ts.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { crc32, extractJsonDocument } from '../../extension/core/parsers/framedDocument';

const CAPTURE = fs.readFileSync(path.resolve(process.cwd(), 'test-fixtures', 'engine', 'debian12-framed', 'map-ompi-ucx-3.stdout'), 'utf8');
const LINES = CAPTURE.split('\n');
const CHUNK = (l: string): boolean => l.startsWith('@@GPUMPI-JSON@@ ');
/** Chunk index of a chunk line. */
const indexOf = (l: string): number => Number(l.split(' ')[2]);

function doc(text: string): { schema: string; pairs: unknown[]; ranks: unknown[] } {
	const r = extractJsonDocument(text);
	assert.ok('json' in r, 'error' in r ? r.error : '');
	return r.json as { schema: string; pairs: unknown[]; ranks: unknown[] };
}

function error(text: string): string {
	const r = extractJsonDocument(text);
	assert.ok('error' in r, 'a damaged document must be an error, not a result');
	return r.error;
}

describe('framed engine documents (real capture, damaged on purpose)', () => {
	it('reads the intact capture: 3 ranks, 3 pairs, amid UCX lines', () => {
		const d = doc(CAPTURE);
		assert.equal(d.schema, 'gpumpi.map/1');
		assert.equal(d.ranks.length, 3);
		assert.equal(d.pairs.length, 3);
		assert.ok(LINES.filter(l => /UCX\s+INFO/.test(l)).length > 5, 'the capture really has UCX lines around the document');
	});

	it('uses the CRC-32 of zlib (check value of "123456789" is cbf43926)', () => {
		assert.equal(crc32(Buffer.from('123456789')).toString(16), 'cbf43926');
	});

	it('survives a copy of every chunk cut in the middle with another rank\'s line appended (Open MPI IOF splits)', () => {
		const seen = new Set<number>();
		const damaged = LINES.map(l => {
			if (!CHUNK(l) || seen.has(indexOf(l))) { return l; }
			seen.add(indexOf(l));
			return `${l.slice(0, Math.floor(l.length / 2))}[1796279555.6] [vm:23713:0] ucp_worker.c:1783 UCX  INFO  ep_cfg[0]: tag(self/memory0)`;
		}).join('\n');
		assert.equal(doc(damaged).pairs.length, 3);
	});

	it('survives lost begin and end lines, `srun --label` prefixes and NUL bytes', () => {
		const damaged = LINES.filter(l => !l.startsWith('@@GPUMPI-JSON-BEGIN@@') && !l.startsWith('@@GPUMPI-JSON-END@@'))
			.map((l, i) => `${i % 3}: ${l}\0`).join('\n');
		assert.equal(doc(damaged).schema, 'gpumpi.map/1');
	});

	it('keeps exactly the announced bytes of a chunk when another process wrote on the same line after it', () => {
		const damaged = LINES.map(l => CHUNK(l) ? `${l}noise without a newline {"schema": 1}` : l).join('\n');
		assert.equal(doc(damaged).pairs.length, 3);
	});

	it('names the chunk and its byte range when every copy of one chunk is damaged', () => {
		const damaged = LINES.map(l => CHUNK(l) && indexOf(l) === 2 ? l.replace(/"/, "'") : l).join('\n');
		const e = error(damaged);
		assert.match(e, /chunk 3 of 5 \(from byte 1200 of 2618\) is damaged: its CRC-32 is [0-9a-f]{8}, the engine wrote c6586ccb/);
		assert.match(e, /output line \d+/);
	});

	it('says a chunk is missing, and that the output looks cut, when the end of the output is lost', () => {
		const firstCopyEnd = LINES.findIndex(l => CHUNK(l) && indexOf(l) === 4);
		const cut = LINES.slice(0, firstCopyEnd).join('\n');
		assert.match(error(cut), /chunk 5 of 5 \(from byte 2400 of 2618\) is missing and so is the end line/);
	});

	it('says when a line arrived short', () => {
		const damaged = LINES.map(l => CHUNK(l) && indexOf(l) === 0 ? l.slice(0, 200) : l).join('\n');
		assert.match(error(damaged), /chunk 1 of 5 \(from byte 0 of 2618\) is damaged: 1\d\d of its 600 bytes arrived/);
	});

	it('is an error when no intact line of the document arrived at all', () => {
		const damaged = LINES.map(l => CHUNK(l) ? l.slice(0, 120) : l).join('\n');
		assert.match(error(damaged), /no intact line of it arrived|is damaged/);
		assert.match(error(LINES.filter(l => !l.includes('@@GPUMPI-JSON')).join('\n')), /no JSON document in the output/);
	});

	it('reports the last document started, not an earlier intact one, when the last is damaged', () => {
		const second = CAPTURE.replace(/85cb5c38/g, '0000abcd').split('\n').map(l => CHUNK(l) && indexOf(l) === 1 ? l.slice(0, 100) : l).join('\n');
		assert.match(error(`${CAPTURE}\n${second}`), /document 0000abcd: chunk 2 of 5/);
	});

	it('still reads the older engines\' format (document alone between two marker lines)', () => {
		const legacy = `UCX  INFO  ep_cfg[0]: tag(self/memory0)\n@@GPUMPI-JSON-BEGIN@@\n{"schema":"gpumpi.map/1","pairs":[],"ranks":[]}\n@@GPUMPI-JSON-END@@\n`;
		assert.equal(doc(legacy).schema, 'gpumpi.map/1');
		assert.match(error('@@GPUMPI-JSON-BEGIN@@\n{"schema": "gpumpi.map/1", \n@@GPUMPI-JSON-END@@\n'), /does not parse as JSON: .*around byte/);
	});
});
