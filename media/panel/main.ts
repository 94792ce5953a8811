/**
 * Diagnostics panel webview client. Asks the host for its state with `ready`, renders the report with the shared
 * renderer, follows showReport/busy events, and turns clicks into `copy` / `rerun` requests.
 * No inline scripts or styles: the CSP allows only this nonce'd bundle and the panel stylesheet.
 */
import {
	MessageHandler, type Envelope, type FromWebviewMessage, type ReadyResponse, type ToWebviewMessage,
} from '../../extension/shared/protocol';
import { DEFAULT_STRINGS, renderReportHtml, type RenderStrings } from '../../extension/shared/render';
import type { Report } from '../../extension/shared/report';

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
const strings = readStrings();
const content = document.getElementById('content');
const busyEl = document.getElementById('busy');
const rerunButton = document.getElementById('rerun') as HTMLButtonElement | null;

function readStrings(): PanelStrings {
	const base: PanelStrings = { ...DEFAULT_STRINGS, rerun: 'Re-run', copied: 'Copied', waiting: 'No report yet.', copyFailed: 'Copy failed' };
	try {
		const parsed: unknown = JSON.parse(document.body.dataset.strings ?? '{}');
		if (typeof parsed === 'object' && parsed !== null) {
			for (const [k, v] of Object.entries(parsed)) {
				if (k in base && typeof v === 'string') { (base as unknown as Record<string, string>)[k] = v; }
			}
		}
	} catch { /* keep defaults */ }
	return base;
}

const rpc = new MessageHandler<FromWebviewMessage, ToWebviewMessage>(
	env => vscode.postMessage(env),
	msg => {
		switch (msg.type) {
			case 'showReport': showReport(msg.report); return undefined;
			case 'busy': setBusy(msg.busy, msg.message); return undefined;
			default: return undefined;
		}
	},
);

function isEnvelope(x: unknown): x is Envelope<ToWebviewMessage> {
	if (typeof x !== 'object' || x === null) { return false; }
	const kind = (x as { kind?: unknown }).kind;
	return kind === 'event' || kind === 'request' || kind === 'reply';
}

window.addEventListener('message', ev => {
	if (isEnvelope(ev.data)) { void rpc.handleMessage(ev.data); }
});

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
		rpc.sendRequest<void>({ type: 'copy', text }).then(
			() => { copy.textContent = strings.copied; copy.classList.add('copied'); },
			() => { copy.textContent = strings.copyFailed; },
		);
		return;
	}
	if (target?.closest('#rerun')) {
		void rpc.sendRequest<void>({ type: 'rerun' }).catch(() => undefined);
	}
});

if (rerunButton) { rerunButton.textContent = strings.rerun; }

rpc.sendRequest<ReadyResponse>({ type: 'ready' }).then(
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
