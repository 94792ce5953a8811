// Types of scripts/benchSections.mjs (for test/unit/benchSections.test.ts).
export function keptSections(text: string): string;
export function withKeptSections(body: string, previous: string | undefined): string;
export function replaceSection(text: string, begin: string, end: string, section: string): string;
