#!/usr/bin/env node
// The "guard on programs it was not written for" table of docs/device-results.md, generated from the recorded runs
// (scripts/gpu/foreign.sh's foreign.jsonl, kept in test-fixtures/guard-foreign/). Usage: node scripts/foreignTable.mjs FILE...
// Per scenario and mode: launches, exit codes, correct (rc 0 and RESULT PASS), bandwidth min-median-max (GB/s).
// `--as LABEL` first: the files are one run (their rows merged under LABEL) instead of one run per file name.
import fs from 'node:fs';
import path from 'node:path';

const args = process.argv.slice(2);
const as = args[0] === '--as' ? args[1] : null;
const rows = new Map();
for (const file of as ? args.slice(2) : args) {
	for (const line of fs.readFileSync(file, 'utf8').split('\n').filter(l => l.trim())) {
		const r = JSON.parse(line);
		const key = `${as ?? path.basename(file).split('-').slice(0, 4).join('-')}|${r.scenario}`;
		if (!rows.has(key)) { rows.set(key, new Map()); }
		const m = rows.get(key);
		if (!m.has(r.mode)) { m.set(r.mode, []); }
		m.get(r.mode).push(r);
	}
}
const med = a => { const s = [...a].sort((x, y) => x - y); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const cell = list => {
	if (!list) { return '—'; }
	const ok = list.filter(r => r.rc === 0 && r.result === 'PASS').length;
	const rcs = [...new Set(list.map(r => r.rc))].sort((a, b) => a - b).join('/');
	const bw = list.map(r => r.bw).filter(x => typeof x === 'number');
	const b = bw.length ? `; ${Math.min(...bw).toFixed(2)} / ${med(bw).toFixed(2)} / ${Math.max(...bw).toFixed(2)} GB/s` : '';
	return `${ok}/${list.length} correct, exit ${rcs}${b}`;
};
const modes = ['none', 'off', 'report', 'fix'];
console.log('| run | scenario | ' + modes.join(' | ') + ' |');
console.log('| --- | --- | ' + modes.map(() => '---').join(' | ') + ' |');
for (const [key, m] of rows) {
	const [run, sc] = key.split('|');
	console.log(`| ${run} | ${sc} | ${modes.map(x => cell(m.get(x))).join(' | ')} |`);
}
