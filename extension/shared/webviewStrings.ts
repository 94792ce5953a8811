/**
 * Localised webview strings travel as data: the host puts `vscode.l10n.t` results in `<body data-strings>` (JSON),
 * the webview reads them over its English defaults. Placeholders `{0}`… are filled in by `fill`.
 */

/** `defaults` with every string of `json` (the data-strings attribute) whose key `defaults` has. Bad JSON keeps the defaults. */
export function readStrings<T extends object>(defaults: T, json: string | undefined): T {
	const out = { ...defaults };
	try {
		const parsed: unknown = JSON.parse(json ?? '{}');
		if (typeof parsed === 'object' && parsed !== null) {
			for (const [k, v] of Object.entries(parsed)) {
				if (k in out && typeof v === 'string') { (out as Record<string, unknown>)[k] = v; }
			}
		}
	} catch { /* keep the defaults */ }
	return out;
}

/** `template` with `{0}`, `{1}`, … replaced by `args`. */
export function fill(template: string, ...args: Array<string | number>): string {
	return template.replace(/\{(\d+)\}/g, (m, i: string) => (Number(i) < args.length ? String(args[Number(i)]) : m));
}
