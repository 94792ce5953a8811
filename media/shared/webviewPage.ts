/**
 * The start-up every webview of the extension shares: the VS Code API acquired once, the localised strings the host
 * put in `<body data-strings>` read over their English defaults, the protocol carried by a WebviewClient that sees
 * every message from the host first (and drops what fails the protocol's check), and, for the pages of
 * `toolbarAndContent` (extension/shared/webviewHtml.ts: the diagnostics and reproducer panels), the busy line, the
 * content area and the click routing. Each page's main.ts keeps only what it shows and what its buttons ask.
 */
import { WebviewClient, type ProtocolValidator, type RequestMap } from '../../extension/shared/webviewRpc';
import { readStrings } from '../../extension/shared/webviewStrings';

interface VsCodeApi { postMessage(message: unknown): void }
declare function acquireVsCodeApi(): VsCodeApi;

/** Clicks on (or inside) the elements `selector` matches: `handle` gets the matching element. */
export type ClickRoute = [selector: string, handle: (el: HTMLElement, ev: MouseEvent) => void];

/** A started webview page. */
export interface WebviewPage<ToWebview, M extends RequestMap, S> {
	readonly rpc: WebviewClient<ToWebview, M>;
	readonly strings: S;
	/** `#content` and `#busy` of the shared shell (null on a page without them). */
	readonly content: HTMLElement | null;
	readonly busyEl: HTMLElement | null;
	/** The content becomes one paragraph of `text` with class `className` (a placeholder, an error). */
	say(text: string, className: string): void;
	/** Show or hide the busy line; `body[data-busy]` follows (the CSS and the UI tests read it). */
	setBusy(busy: boolean, message: string): void;
	/** Route document clicks: the first route whose selector the clicked element is on or inside of gets it. */
	routeClicks(routes: ClickRoute[]): void;
}

/** Start the page: call once, at the top of a webview's main.ts. */
export function startWebview<ToWebview, M extends RequestMap, S extends object>(
	protocol: ProtocolValidator<ToWebview, M>, defaultStrings: S, onEvent: (msg: ToWebview) => void,
): WebviewPage<ToWebview, M, S> {
	const api = acquireVsCodeApi();
	const rpc = new WebviewClient<ToWebview, M>(env => api.postMessage(env), protocol, onEvent);
	// Every message from the host passes the protocol's check first; anything else is dropped.
	window.addEventListener('message', ev => { rpc.receive(ev.data); });
	const content = document.getElementById('content');
	const busyEl = document.getElementById('busy');
	return {
		rpc, content, busyEl,
		strings: readStrings(defaultStrings, document.body.dataset.strings),
		say(text, className) {
			if (!content) { return; }
			const p = document.createElement('p');
			p.className = className;
			p.textContent = text;
			content.replaceChildren(p);
		},
		setBusy(busy, message) {
			if (busyEl) { busyEl.hidden = !busy; busyEl.textContent = message; }
			document.body.dataset.busy = busy ? 'true' : 'false';
		},
		routeClicks(routes) {
			document.addEventListener('click', ev => {
				const target = ev.target instanceof Element ? ev.target : null;
				for (const [selector, handle] of routes) {
					const el = target?.closest<HTMLElement>(selector);
					if (el) { handle(el, ev); return; }
				}
			});
		},
	};
}

/** An error's message, for the page. */
export function errorMessage(e: unknown): string {
	return e instanceof Error ? e.message : String(e);
}
