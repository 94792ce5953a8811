/**
 * renderReportHtml / renderStandaloneReport: hostile strings in every field stay text, findings are grouped by
 * severity, copy buttons carry the exact command, and the standalone document has no script at all.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { REPORT_SCHEMA, type Finding, type Report } from '../../extension/shared/report';
import { DEFAULT_STRINGS, displayArgv, renderReportHtml, renderStandaloneReport } from '../../extension/shared/render';
import { escapeHtml } from '../../extension/shared/htmlEscape';

const EVIL = `<script>alert("x")</script><img src=x onerror='alert(1)'>\`&amp;`;

function finding(id: string, severity: Finding['severity'], extra: Partial<Finding> = {}): Finding {
	return {
		id, severity, title: `${id} title ${EVIL}`, message: `${id} message ${EVIL}`,
		evidence: [{ source: `ompi_info${EVIL}`, line: `mpi_built_with_cuda_support:value:false ${EVIL}`, lineNo: 12 }],
		fix: { text: `fix text ${EVIL}`, command: `export OMPI_MCA_pml='ucx' "${EVIL}"` },
		source: `javascript:alert(1)${EVIL}`,
		...extra,
	};
}

function hostileReport(): Report {
	return {
		schema: REPORT_SCHEMA,
		tool: { name: `gpumpi${EVIL}`, version: `0.1${EVIL}` },
		createdAt: `2026${EVIL}`,
		host: { id: 'local', label: `label${EVIL}`, kind: 'local' },
		summary: {
			hostname: `host${EVIL}`,
			mpi: { label: `Open MPI${EVIL}`, cudaAware: 'no', detail: `detail${EVIL}` },
			ucx: { label: `UCX${EVIL}`, cuda: 'unknown', detail: `ucx detail${EVIL}` },
			cuda: { label: `CUDA${EVIL}`, driverVersion: `580${EVIL}` },
			gpus: [{ index: 0, name: `H200${EVIL}`, pciBusId: `0000:19:00.0${EVIL}`, memoryMiB: 143771 }],
		},
		findings: [
			finding('info-one', 'info', { fix: undefined, source: 'https://www.open-mpi.org/faq/?category=runcuda' }),
			finding('err-one', 'error'),
			finding('warn-one', 'warning'),
			finding('err-two', 'error', { evidence: [] }),
		],
		facts: null,
		raw: [
			{ id: `ompi_info${EVIL}`, command: ['ompi_info', '--parsable', `a b${EVIL}`], exitCode: 0, stdout: `out${EVIL}`, stderr: `err${EVIL}`, durationMs: 12 },
			{ id: 'nvidia_smi_xml', command: ['nvidia-smi', '-q', '-x'], exitCode: null, stdout: '', stderr: '', durationMs: 0, error: `not found on PATH${EVIL}` },
			{ id: 'engine', command: ['mpirun', '--allow-run-as-root'], exitCode: 0, stdout: '{}', stderr: '', durationMs: 5, notes: [`note${EVIL}`] },
		],
		engine: null,
		probe: null,
		elapsedMs: 42,
	};
}

/** Every `<tag` in the markup, lower-cased. */
function tags(html: string): Set<string> {
	return new Set([...html.matchAll(/<([a-zA-Z][a-zA-Z0-9]*)/g)].map(m => m[1].toLowerCase()));
}

describe('renderReportHtml', () => {
	const html = renderReportHtml(hostileReport());

	it('escapes hostile strings in every field (no tag, attribute or entity from data survives)', () => {
		assert.ok(!tags(html).has('script'), 'no <script');
		assert.ok(!tags(html).has('img'), 'no <img');
		// Every tag in the output is one of ours, well-formed, with allowed attribute names only.
		for (const m of html.matchAll(/<[a-zA-Z][^>]*>/g)) {
			const tag = /^<([a-z0-9]+)((?:\s+[a-z-]+(?:="[^"<>]*")?)*)\s*>$/.exec(m[0]);
			assert.ok(tag, `well-formed tag: ${m[0].slice(0, 120)}`);
			for (const a of tag[2].matchAll(/\s+([a-z-]+)(?:="[^"]*")?/g)) {
				assert.ok(/^(class|id|href|type|title|hidden|data-[a-z-]+)$/.test(a[1]), `attribute ${a[1]} allowed`);
			}
		}
		// The raw EVIL text never appears; its escaped form appears once per field it was put in.
		assert.ok(!html.includes(EVIL));
		const escaped = escapeHtml(EVIL);
		const occurrences = html.split(escaped).length - 1;
		assert.ok(occurrences >= 25, `escaped hostile text in every field (${occurrences})`);
	});

	it('never makes a link from a non-http source', () => {
		assert.ok(!/href="javascript/i.test(html));
		assert.match(html, /<a href="https:\/\/www\.open-mpi\.org\/faq\/\?category=runcuda">/);
	});

	it('renders a finding\'s sources: https as links, docs/ pages as their path, anything else never as a link', () => {
		const f = finding('src-one', 'info', { sources: [
			{ url: 'https://github.com/openucx/ucx/pull/11062', shows: `a cap ${EVIL}` },
			{ url: 'docs/device-results.md#inspect', shows: 'measured' },
			{ url: `javascript:alert(1)${EVIL}`, shows: 'x' },
		] });
		const out = renderReportHtml({ ...hostileReport(), findings: [f] }, { interactive: false });
		assert.match(out, /<a class="source-link" href="https:\/\/github\.com\/openucx\/ucx\/pull\/11062">https:\/\/github\.com\/openucx\/ucx\/pull\/11062<\/a> <span class="source-shows">— a cap &lt;script&gt;/);
		assert.match(out, /<code class="source-doc">docs\/device-results\.md#inspect<\/code>/);
		assert.ok(!/href="javascript/i.test(out));
		assert.equal((out.match(/class="source-item"/g) ?? []).length, 3);
	});

	it('groups findings by severity: errors, then warnings, then info', () => {
		const order = [...html.matchAll(/class="finding severity-(\w+)" data-rule-id="([^"]+)"/g)].map(m => `${m[1]}:${m[2]}`);
		assert.deepEqual(order, ['error:err-one', 'error:err-two', 'warning:warn-one', 'info:info-one']);
		assert.match(html, /<section class="severity-group group-error" data-severity="error"><h3 class="severity-heading">Errors \(2\)/);
	});

	it('puts the fix command in <code> and a copy button whose data-copy is the exact command', () => {
		const cmd = `export OMPI_MCA_pml='ucx' "${EVIL}"`;
		assert.ok(html.includes(`<code class="fix-code">${escapeHtml(cmd)}</code>`));
		assert.ok(html.includes(`data-copy="${escapeHtml(cmd)}"`));
		assert.equal((html.match(/class="copy-button"/g) ?? []).length, 3, 'one per finding with a fix command');
		// An HTML parser decodes the attribute back to the exact command (decode the five entities we emit).
		const attr = /data-copy="([^"]*)"/.exec(html)?.[1] ?? '';
		const decoded = attr.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&#96;/g, '`').replace(/&amp;/g, '&');
		assert.equal(decoded, cmd);
	});

	it('shows evidence with source id and line number, and raw outputs in <details>', () => {
		// Interactive (the panel): the place is a link to the line (media/panel/main.ts opens it); static: plain text.
		assert.ok(html.includes(`data-evidence-index="0" title="${escapeHtml(DEFAULT_STRINGS.openEvidence)}">${escapeHtml(`ompi_info${EVIL}:12`)}</button>`), 'evidence link');
		assert.ok(!html.includes('href="#"'), 'no href="#" (VS Code scrolls the webview to its top on such a click)');
		const still = renderReportHtml(hostileReport(), { interactive: false });
		assert.ok(still.includes(`<span class="evidence-source">${escapeHtml(`ompi_info${EVIL}:12`)}</span>`));
		assert.ok(!still.includes('evidence-link'));
		assert.match(html, /<section id="summary"/);
		assert.match(html, /<section id="raw"/);
		assert.equal((html.match(/<details class="raw-output/g) ?? []).length, 3);
		assert.match(html, /did not run: not found on PATH/);
		assert.match(html, /class="raw-notes"/);
		assert.match(html, /exit code 0/);
	});

	it('renders an empty report without findings', () => {
		const r = hostileReport();
		r.findings = [];
		r.summary.gpus = [];
		const out = renderReportHtml(r);
		assert.match(out, /No findings\./);
		assert.match(out, /No GPU reported/);
	});

	it('survives a malformed report (missing arrays) without throwing', () => {
		const r = hostileReport() as unknown as Record<string, unknown>;
		r.findings = undefined;
		r.raw = 'garbage';
		(r.summary as Record<string, unknown>).gpus = null;
		const out = renderReportHtml(r as unknown as Report);
		assert.match(out, /Raw tool outputs \(0\)/);
	});

	it('displayArgv quotes what a shell would need quoted', () => {
		assert.equal(displayArgv(['mpirun', '-np', '2', "it's", 'a b', '']), `mpirun -np 2 'it'\\''s' 'a b' ''`);
	});
});

describe('renderStandaloneReport', () => {
	const css = fs.readFileSync(path.join(__dirname, '../../../media/panel/panel.css'), 'utf8');
	const doc = renderStandaloneReport(hostileReport(), `${css}\n/* </style><script>alert(1)</script> */`);

	it('has the strict CSP meta and no script element at all', () => {
		assert.match(doc, /<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">/);
		assert.ok(!/<script/i.test(doc));
		assert.equal((doc.match(/<\/style>/g) ?? []).length, 1, 'CSS cannot close the style element early');
	});

	it('inlines the panel CSS with fallback token values and no copy buttons', () => {
		assert.ok(doc.includes('.finding.severity-error'));
		assert.match(doc, /--vscode-foreground: #/);
		assert.ok(!doc.includes('copy-button"'), 'no buttons without a script');
		assert.match(doc, /<code class="fix-code">/);
	});
});

describe('panel.css', () => {
	it('uses only var(--vscode-*) tokens for colours', () => {
		const css = fs.readFileSync(path.join(__dirname, '../../../media/panel/panel.css'), 'utf8');
		assert.ok(!/#[0-9a-fA-F]{3,8}\b/.test(css), 'no literal hex colours');
		assert.ok(!/rgba?\(/.test(css), 'no rgb() colours');
		for (const m of css.matchAll(/var\((--[a-zA-Z0-9-]+)/g)) { assert.ok(m[1].startsWith('--vscode-'), m[1]); }
	});
});
