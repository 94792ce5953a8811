/**
 * The VS Code fallback reproducer's "Also try UCX staging settings" (issue 16 item 8): what the picks become — the
 * validated choices, the gpumpiDoctor.repro.tryUcx setting, the runner's ucxSettings and the launcher argv of each
 * tried setting (one argv item per value, never a shell) — with the same validator as the CLI's `--try-ucx`; and the
 * results panel's per-setting rows on the REAL H200 `--try-ucx staging` run
 * (test-fixtures/repro/h200-testbed/experiments-tryucx-2026-12-04.json).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseReproArgs } from '../../extension/cli/reproCli';
import {
	checkUcxSetting, configsFromChoices, MAX_TRY_UCX, tryUcxFromSetting, UCX_STAGING_TRIES, UCX_STAGING_TRY_INFO, ucxSettingsOf, ucxTryList, validateChoices,
	type ReproChoices,
} from '../../extension/core/repro/reproChoices';
import { withUcxSetting } from '../../extension/core/repro/fallbackRunner';
import { buildLaunchArgv } from '../../extension/core/launch/launchArgv';
import { defaultSpec, withConfig } from '../../extension/core/launch/launchSpec';
import { renderReproHtml } from '../../media/repro/render';
import type { ReproFallbackReport } from '../../extension/shared/reproSchema';

const HOSTILE = [
	'UCX_X=$(rm -rf ~)', 'UCX_TLS=`reboot`', 'UCX_TLS=a b', 'UCX_TLS=a;b', "UCX_TLS='x'", 'UCX_TLS="x"', 'UCX_TLS=a|b', 'UCX_TLS=a&&b',
	'UCX_TLS=a\nb', 'UCX_TLS=', 'UCX_=1', 'ucx_tls=sm', 'LD_PRELOAD=/tmp/x.so', 'PATH=/tmp', '=x', 'UCX_TLS', `UCX_TLS=${'a'.repeat(300)}`,
	'--mca pml ucx', 'staging ',
];

function choices(raw: unknown): ReproChoices {
	const c = validateChoices(raw);
	if (typeof c === 'string') { throw new Error(c); }
	return c;
}

describe('fallback picker: UCX settings to try → choices → runner arguments', () => {
	it('offers the four measured staging settings, each saying what it changes and what the H200 measured', () => {
		assert.deepEqual(UCX_STAGING_TRY_INFO.map(t => t.setting), [...UCX_STAGING_TRIES]);
		for (const t of UCX_STAGING_TRY_INFO) {
			assert.equal(checkUcxSetting(t.setting), null, t.setting);
			assert.ok(t.changes.length > 10 && t.measured.startsWith('H200: '), t.setting);
			assert.match(t.measured, /GB\/s/);
		}
		assert.match(UCX_STAGING_TRY_INFO[0].measured, /47\.0 GB\/s.*still grew/);
		assert.match(UCX_STAGING_TRY_INFO[2].measured, /bounded.*0\.88 GB\/s/);
	});

	it('the custom box refuses hostile or non-UCX values with a message, exactly where the CLI refuses them', () => {
		for (const h of HOSTILE) {
			const msg = checkUcxSetting(h);
			assert.ok(msg, `accepted ${JSON.stringify(h)}`);
			assert.match(msg, /UCX_NAME=VALUE, NAME starting with UCX_/);
			assert.throws(() => parseReproArgs(['fallback', '--try-ucx', h]), /--try-ucx needs UCX_NAME=VALUE/, h);
		}
		for (const ok of ['UCX_RNDV_THRESH=inf', 'UCX_TLS=^cuda_ipc', 'UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M', 'UCX_IB_GPU_DIRECT_RDMA=no', 'UCX_MAX_RNDV_RAILS=1']) {
			assert.equal(checkUcxSetting(ok), null, ok);
			assert.deepEqual(parseReproArgs(['fallback', '--try-ucx', ok]).tryUcx, [ok.split(/=(.*)/s).slice(0, 2)]);
		}
	});

	it('picks become choices: in order, duplicates once, "staging" expanded, at most 8; a hostile list is refused', () => {
		const c = choices({ tryUcx: ['UCX_RNDV_SCHEME=get_zcopy', 'UCX_RNDV_THRESH=inf', 'UCX_RNDV_SCHEME=get_zcopy'] });
		assert.deepEqual(c.tryUcx, ['UCX_RNDV_SCHEME=get_zcopy', 'UCX_RNDV_THRESH=inf']);
		assert.deepEqual(choices({ tryUcx: ['staging'] }).tryUcx, [...UCX_STAGING_TRIES]);
		assert.equal(choices({}).tryUcx, null, 'not chosen: the setting decides');
		assert.deepEqual(choices({ tryUcx: [] }).tryUcx, [], 'none picked');
		for (const bad of [['UCX_X=$(rm -rf ~)'], ['LD_PRELOAD=/x.so'], 'UCX_TLS=sm', [1], Array.from({ length: MAX_TRY_UCX + 1 }, (_, i) => `UCX_X${i}=1`)]) {
			const r = validateChoices({ tryUcx: bad });
			assert.equal(typeof r, 'string', JSON.stringify(bad));
			assert.match(r as string, /^tryUcx: /);
		}
		assert.match(ucxTryList(['UCX_X=$(rm -rf ~)']) as string, /"UCX_X=\$\(rm -rf ~\)": UCX_NAME=VALUE/);
		// a stored choice from before the picker had the step (no tryUcx) still loads
		assert.equal(choices({ mpirun: 'mpirun.mpich', presets: [] }).tryUcx, null);
	});

	it('the gpumpiDoctor.repro.tryUcx setting: valid entries kept, each invalid one a warning, never a throw', () => {
		assert.deepEqual(tryUcxFromSetting(undefined), { tryUcx: [], problems: [] });
		assert.deepEqual(tryUcxFromSetting(['staging']).tryUcx, [...UCX_STAGING_TRIES]);
		const r = tryUcxFromSetting(['UCX_RNDV_THRESH=inf', 'UCX_X=$(rm -rf ~)', 42, 'LD_PRELOAD=/x.so', 'UCX_RNDV_THRESH=inf']);
		assert.deepEqual(r.tryUcx, ['UCX_RNDV_THRESH=inf']);
		assert.equal(r.problems.length, 3);
		assert.match(r.problems[0], /^gpumpiDoctor\.repro\.tryUcx: "UCX_X=\$\(rm -rf ~\)": UCX_NAME=VALUE.*left out$/);
		assert.match(r.problems[1], /^gpumpiDoctor\.repro\.tryUcx: 42: not a string; left out$/);
		assert.match(tryUcxFromSetting('staging').problems[0], /must be a list/);
		assert.deepEqual(tryUcxFromSetting('staging').tryUcx, []);
		const many = tryUcxFromSetting(['staging', ...Array.from({ length: 6 }, (_, i) => `UCX_X${i}=1`)]);
		assert.equal(many.tryUcx.length, MAX_TRY_UCX);
		assert.equal(many.problems.length, 2);
		assert.match(many.problems[0], /at most 8 settings; UCX_X4=1 left out/);
	});

	it('the run gets the picks as ucxSettings (the setting when nothing was picked), each one argv item per value', () => {
		const setting = tryUcxFromSetting(['UCX_RNDV_SCHEME=get_zcopy']).tryUcx;
		assert.deepEqual(ucxSettingsOf(choices({}), setting), [['UCX_RNDV_SCHEME', 'get_zcopy']], 'never picked: the setting');
		assert.deepEqual(ucxSettingsOf(choices({ tryUcx: [] }), setting), [], 'picked none: none');
		const c = choices({ tryUcx: ['UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M', 'UCX_RNDV_THRESH=inf'], loopback: true });
		const tries = ucxSettingsOf(c, setting);
		assert.deepEqual(tries, [['UCX_RNDV_FRAG_SIZE', 'host:4M,cuda:4M'], ['UCX_RNDV_THRESH', 'inf']]);
		const [base] = configsFromChoices(c, 'mpich');
		const program = ['/e/gpumpi', 'repro', 'fallback', '--modes', 'mpi'];
		const mpich = buildLaunchArgv(withConfig(defaultSpec('mpich', 'mpirun.mpich', 2), withUcxSetting(base, tries[0])), program);
		assert.deepEqual(mpich, ['mpirun.mpich', '-genv', 'UCX_NET_DEVICES', 'lo', '-genv', 'UCX_RNDV_FRAG_SIZE', 'host:4M,cuda:4M', '-np', '2', ...program]);
		const ompi = buildLaunchArgv(withConfig(defaultSpec('openmpi', 'mpirun.openmpi', 2), withUcxSetting(base, tries[1])), program);
		assert.ok(ompi.includes('UCX_RNDV_THRESH=inf') && ompi[ompi.indexOf('UCX_RNDV_THRESH=inf') - 1] === '-x', ompi.join(' '));
		assert.equal(withUcxSetting(base, tries[1]).label, 'default, UCX_RNDV_THRESH=inf');
		// a configuration's own value of the variable is replaced, not doubled
		const own = withUcxSetting({ ...base, env: [['UCX_RNDV_THRESH', '8K']] }, tries[1]);
		assert.deepEqual(own.env, [['UCX_RNDV_THRESH', 'inf']]);
	});
});

describe('results panel: the UCX settings tried (real H200 --try-ucx staging run)', () => {
	const cap = JSON.parse(fs.readFileSync(path.resolve('test-fixtures/repro/h200-testbed/experiments-tryucx-2026-12-04.json'), 'utf8')) as { runs: Array<{ doc: ReproFallbackReport }> };
	const rep = cap.runs[0].doc;
	const html = renderReproHtml({ ipc: null, fallback: [rep], source: 'tryucx' });

	it('one row per setting beside MPI as configured: trials, GB/s range, vs MPI, host MiB and MiB per GiB, bounded or not', () => {
		const table = /<table class="results ucx-settings">.*?<\/table>/s.exec(html)?.[0] ?? '';
		assert.ok(table, 'the table is there');
		const rows = [...table.matchAll(/<tr class="ucx-setting[^"]*" data-setting="([^"]+)">(.*?)<\/tr>/gs)].map(m => ({ s: m[1], cells: [...m[2].matchAll(/<td[^>]*>(.*?)<\/td>/gs)].map(c => c[1].replace(/<[^>]+>/g, '')) }));
		assert.deepEqual(rows.map(r => r.s), [...UCX_STAGING_TRIES]);
		assert.deepEqual(rows[0].cells, ['UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M best measured', '3/3', '47.04 (47.03–47.08)', 'faster', '769.0 (769.0–769.0)', '769', 'grows with the message']);
		assert.deepEqual(rows[2].cells.slice(1), ['3/3', '0.88 (0.88–0.90)', 'slower', '0.0 (all 3 runs)', '0', 'bounded']);
		assert.match(table, /<tr class="reference"><td>MPI as configured<\/td><td class="num">3<\/td><td class="num">35\.86 \(35\.64–36\.20\)<\/td><td>–<\/td><td class="num">775\.1 \(774\.\d–775\.\d\)<\/td><td class="num">775<\/td>/);
		assert.match(html, /<h3>UCX settings tried at 1 GiB<\/h3>/);
	});

	it('the verdict line names the best measured setting (from the line, in reports saved before ucxBest)', () => {
		assert.equal(rep.ranking?.ucxBest, undefined, 'saved before the field');
		assert.match(html, /<p class="ucx-verdict verdict verdict-warn">Best UCX setting measured: UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M is faster than MPI as configured, but the host staging still grows/);
		assert.equal((html.match(/best measured<\/span>/g) ?? []).length, 1);
	});

	it('the charts and the trial table keep each setting apart from MPI as configured', () => {
		assert.match(html, /mpi\+UCX_RNDV_SCHEME=get_zcopy/);
		const trialRows = [...html.matchAll(/<tr class="status-ok"><td class="num">\d+<\/td><td>([^<]+)<\/td>/g)].map(m => m[1]);
		assert.ok(trialRows.includes('mpi') && trialRows.includes('mpi+UCX_RNDV_FRAG_MEM_TYPE=cuda'), trialRows.join());
	});

	it('a failed setting shows its failure; hostile text is escaped; no table without settings', () => {
		const bad: ReproFallbackReport = { ...rep, ranking: { ...rep.ranking!, ucxBest: null, ucxSettings: [{ setting: 'UCX_X=<b>', ok: 0, launched: 2, bestGbps: null, extraHostBytes: null, bandwidth: null, boundsMemory: null, failure: 'crashed: <img src=x onerror=alert(1)>' }] } };
		const h = renderReproHtml({ ipc: null, fallback: [bad], source: 's' });
		assert.match(h, /<tr class="ucx-setting failed" data-setting="UCX_X=&lt;b&gt;">/);
		assert.match(h, /crashed: &lt;img src=x onerror=alert\(1\)&gt;/);
		assert.doesNotMatch(h, /<img|<b>/);
		const none = renderReproHtml({ ipc: null, fallback: [{ ...rep, ranking: { ...rep.ranking!, ucxSettings: [] } }], source: 's' });
		assert.doesNotMatch(none, /ucx-settings/);
	});
});
