/**
 * HTML escaping for the string-built report markup (shared by the webview and the standalone HTML report).
 * Everything that comes from a tool, a file, the environment or a rule goes through `escapeHtml`.
 */

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

/** Escape text for element content and double- or single-quoted attribute values. */
export function escapeHtml(value: unknown): string {
	const s = typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value);
	// Also drop C0 controls other than tab/newline/CR: they are invalid in HTML and confuse terminals when copied.
	return s.replace(/[&<>"'`]/g, c => ENTITIES[c]).replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, c => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** A safe class-name token from arbitrary text (letters, digits, dash, underscore). */
export function classToken(value: string): string {
	return value.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 64) || 'x';
}

/** Only http(s) URLs become links; anything else is shown as text. */
export function safeHref(value: string): string | null {
	return /^https?:\/\/[^\s<>"'`]+$/i.test(value) ? value : null;
}
