#!/usr/bin/env node
// Generates test-fixtures/map/map-1024.json: a 1 024-rank transport map (128 hosts x 8 ranks, --pairs sampled shape:
// every pair within a host + one pair per pair of hosts = 128*28 + 128*127/2 = 11 712 pairs) for the webview
// benchmark and screenshots. Nothing is invented beyond the topology: every number and every per-rank record is
// copied from two REAL 4-rank runs captured on this machine (test-fixtures/map/README.md says how):
//   intra-host pairs  <- the 6 pairs of map-4-openmpi-vader.json (shared memory): a host's k-th pair takes pair k mod 6
//   inter-host pairs  <- the 6 pairs of map-4-openmpi-tcp.json (tcp over loopback): hosts i, j take pair (i + j) mod 6
// Every node gets the same mix of the real pairs (within a host exactly the same pairs; between hosts within one pair
// of each: a node's 127 partners' sums i + j run through all residues mod 6), so no node stands out; cycling in pair order gave some nodes more of the slow
// samples than others (79 false latency outliers).
//   rank records      <- rank (r % 4) of the vader run, with host "node%03d", rank and pid rewritten
// Deterministic (no randomness): the same inputs give the same file.
// Usage: node scripts/genMapFixture.mjs [--intra FILE] [--inter FILE] [--hosts 128] [--per-host 8] [--out FILE]
//
// --scale NODES writes instead the simulated map of scripts/mapScaleGen.mjs (issue 36): NODES nodes x 8 GPUs, the
// engine's sampled schedule, synthetic numbers with planted faults, the runner's outlier analysis NOT included (open
// it in the panel or run the unit test for that). 2 048 nodes = 16 384 ranks, 2 153 472 pairs, ~1 GB: written in
// pieces (one JSON.stringify of it is past V8's longest string) and NOT committed; the tests and the benchmark make
// it in memory. Usage: node --max-old-space-size=8192 scripts/genMapFixture.mjs --scale 2048 --out /tmp/map-16384.json
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateScaleMap } from './mapScaleGen.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 && args[i + 1] ? args[i + 1] : def; };
if (args.includes('--scale')) {
	const nodes = Number(opt('--scale', '2048'));
	const out = opt('--out', '');
	if (!(Number.isInteger(nodes) && nodes >= 2 && nodes <= 8192) || out === '') { console.error('usage: genMapFixture.mjs --scale NODES (2-8192) --out FILE'); process.exit(2); }
	const doc = generateScaleMap(nodes);
	const { pairs, ...head } = doc;
	const fd = fs.openSync(path.resolve(out), 'w');
	const text = JSON.stringify(head);
	fs.writeSync(fd, `${text.slice(0, -1)},"pairs":[`);
	for (let i = 0; i < pairs.length; i += 20000) { fs.writeSync(fd, `${i === 0 ? '' : ','}${pairs.slice(i, i + 20000).map(p => JSON.stringify(p)).join(',\n')}`); }
	fs.writeSync(fd, ']}\n');
	fs.closeSync(fd);
	console.log(`${out}: ${doc.world_size} ranks, ${nodes} nodes, ${pairs.length} pairs (${doc.generated.note})`);
	process.exit(0);
}
const intraFile = opt('--intra', 'test-fixtures/map/map-4-openmpi-vader.json');
const interFile = opt('--inter', 'test-fixtures/map/map-4-openmpi-tcp.json');
const hosts = Number(opt('--hosts', '128'));
const perHost = Number(opt('--per-host', '8'));
const outFile = opt('--out', 'test-fixtures/map/map-1024.json');
if (!(hosts >= 1 && perHost >= 1 && hosts * perHost <= 8192)) { console.error('bad --hosts/--per-host'); process.exit(2); }

const load = f => JSON.parse(fs.readFileSync(path.resolve(root, f), 'utf8'));
const intra = load(intraFile), inter = load(interFile);
for (const [f, d] of [[intraFile, intra], [interFile, inter]]) {
	if (d.schema !== 'gpumpi.map/1' || !d.pairs?.length || !d.ranks?.length) { console.error(`${f}: not a gpumpi.map/1 document with pairs`); process.exit(1); }
}
const n = hosts * perHost;
const hostName = h => `node${String(h).padStart(3, '0')}`;
const ranks = [];
for (let r = 0; r < n; r++) {
	const t = intra.ranks[r % intra.ranks.length];
	ranks.push({ ...t, rank: r, host: hostName(Math.floor(r / perHost)), pid: 100000 + r, local_rank: r % perHost });
}
const pairs = [];
let ki = 0, ke = 0;
const copy = (src, a, b) => {
	const ha = ranks[a].host, hb = ranks[b].host;
	const evidence = src.evidence.map(e => e.startsWith('same host') ? (ha === hb ? `same host ${ha}` : `hosts ${ha} and ${hb}`) : e.startsWith('hosts ') ? `hosts ${ha} and ${hb}` : e.replace(/\(\d+→\d+\)/, `(${a}→${b})`).replace(/\(\d+→\d+\)$/, `(${b}→${a})`));
	return { ...src, a, b, same_host: ha === hb, evidence };
};
const seen = new Set();
/** Index of the pair of local ranks i < j among its host's pairs in pair order (0, 1), (0, 2), …: the same on every host. */
const intraIndex = (i, j) => i * perHost - i * (i + 1) / 2 + (j - i - 1);
for (let a = 0; a < n; a++) {
	for (let b = a + 1; b < n; b++) {
		const ha = Math.floor(a / perHost), hb = Math.floor(b / perHost);
		if (ha === hb) { pairs.push(copy(intra.pairs[(intraIndex(a % perHost, b % perHost)) % intra.pairs.length], a, b)); ki++; continue; }
		const key = `${ha}-${hb}`;
		if (seen.has(key)) { continue; }
		seen.add(key);
		ke++;
		const p = copy(inter.pairs[(ha + hb) % inter.pairs.length], a, b);
		p.reason = 'host buffers; MPI uses the network between hosts';
		pairs.push(p);
	}
}
const doc = {
	...intra,
	options: { ...intra.options, pairs: 'sampled' },
	world_size: n, sampled: true, total_pairs: n * (n - 1) / 2, ranks, pairs, errors: [],
	runner: intra.runner ? { ...intra.runner, evidenceLines: intra.runner.evidenceLines.slice(0, 8) } : undefined,
	generated: {
		by: 'scripts/genMapFixture.mjs',
		from: `${path.basename(intraFile)} (intra-host) + ${path.basename(interFile)} (inter-host)`,
		note: `${hosts} hosts x ${perHost} ranks; topology synthetic, every measurement and rank record copied from the real 4-rank runs`,
	},
};
fs.writeFileSync(path.resolve(root, outFile), JSON.stringify(doc) + '\n');
console.log(`${outFile}: ${n} ranks, ${hosts} hosts, ${pairs.length} pairs (${ki} intra-host, ${ke} inter-host)`);
