/**
 * Diagnostics panel webview client. Asks the host for its state with `ready`, renders the report with the shared
 * renderer, follows showReport/busy events, and turns clicks into `copy` / `rerun` requests.
 * No inline scripts or styles: the CSP allows only this nonce'd bundle and the panel stylesheet.
 */
import { PANEL_PROTOCOL, type PanelRequests, type ToWebviewMessage } from '../../extension/shared/protocol';
import { DEFAULT_STRINGS, renderReportHtml, type RenderStrings } from '../../extension/shared/render';
import type { Report } from '../../extension/shared/report';
import { WebviewClient } from '../../extension/shared/webviewRpc';
import { readStrings } from '../../extension/shared/webviewStrings';

interface VsCodeApi {
	postMessage(message: unknown): void;
	setState(state: unknown): void;
	getState(): unknown;
}
declare function acquireVsCodeApi(): VsCodeApi;

/** Strings the host put in `<body data-strings>` (already localised); anything missing falls back to English. */
interface PanelStrings extends RenderStrings {
	rerun: string;
	copied: string;
	waiting: string;
	copyFailed: string;
}

const vscode = acquireVsCodeApi();
const strings = readStrings<PanelStrings>({ ...DEFAULT_STRINGS, rerun: 'Re-run', copied: 'Copied', waiting: 'No report yet.', copyFailed: 'Copy failed' }, document.body.dataset.strings);
const content = document.getElementById('content');
const busyEl = document.getElementById('busy');
const rerunButton = document.getElementById('rerun') as HTMLButtonElement | null;

const rpc = new WebviewClient<ToWebviewMessage, PanelRequests>(env => vscode.postMessage(env), PANEL_PROTOCOL, msg => {
	switch (msg.type) {
		case 'showReport': showReport(msg.report); return;
		case 'busy': setBusy(msg.busy, msg.message); return;
	}
});

// Every message from the host passes PANEL_PROTOCOL's check first; anything else is dropped.
window.addEventListener('message', ev => { rpc.receive(ev.data); });

function showReport(report: Report | null): void {
	if (!content) { return; }
	if (!report) {
		content.innerHTML = '';
		const p = document.createElement('p');
		p.className = 'placeholder';
		p.textContent = strings.waiting;
		content.appendChild(p);
		return;
	}
	// renderReportHtml escapes every value; the CSP forbids inline script regardless.
	content.innerHTML = renderReportHtml(report, { strings, interactive: true });
	document.body.dataset.state = 'report';
}

function setBusy(busy: boolean, message: string): void {
	if (busyEl) {
		busyEl.hidden = !busy;
		busyEl.textContent = message;
	}
	if (rerunButton) { rerunButton.disabled = busy; }
	document.body.dataset.busy = busy ? 'true' : 'false';
}

document.addEventListener('click', ev => {
	const target = ev.target instanceof Element ? ev.target : null;
	const copy = target?.closest<HTMLButtonElement>('button.copy-button');
	if (copy) {
		const text = copy.dataset.copy ?? '';
		rpc.request({ type: 'copy', text }).then(
			() => { copy.textContent = strings.copied; copy.classList.add('copied'); },
			() => { copy.textContent = strings.copyFailed; },
		);
		return;
	}
	if (target?.closest('#rerun')) {
		void rpc.request({ type: 'rerun' }).catch(() => undefined);
	}
});

if (rerunButton) { rerunButton.textContent = strings.rerun; }

rpc.request({ type: 'ready' }).then(
	r => { setBusy(r.busy, r.busy ? (busyEl?.textContent ?? '') : ''); showReport(r.report); },
	err => {
		if (content) {
			content.textContent = '';
			const p = document.createElement('p');
			p.className = 'error-banner';
			p.textContent = String(err instanceof Error ? err.message : err);
			content.appendChild(p);
		}
	},
);
