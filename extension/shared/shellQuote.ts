/**
 * POSIX shell quoting of argv items: what SshHost needs (ssh joins argv with spaces for the remote shell) and what the
 * panels and reports use to show a command line the user can paste into a shell as it ran (no shell ran it here).
 */

/** Quote one argument for a POSIX shell. */
export function posixQuote(arg: string): string {
	if (arg.length > 0 && /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg)) { return arg; }
	return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** Quote a whole argv for a POSIX shell. */
export function posixQuoteArgv(argv: readonly string[]): string {
	return argv.map(posixQuote).join(' ');
}
