/**
 * The rule engine: a rule reads named fact paths and returns findings; the engine runs every rule and turns a rule
 * that throws into an `info` finding ("rule X failed: ...") so one broken rule never loses the other findings.
 */
import type { Evidence, Finding, Fix, Severity, SourceRef } from '../../shared/report';
import type { Facts } from '../facts';

/**
 * A release range: `all` (every release, the claim does not depend on the version) or space-separated comparisons
 * that must all hold, e.g. `>=1.19.0`, `>=4.0 <5`, `<1.14`. test/unit/rules/ruleSources.test.ts checks the form.
 */
export type VersionRange = string;

/** Every release, as a range. */
export const ALL_VERSIONS: VersionRange = 'all';

/** The versions a rule's claims hold for, per component; at least one key. */
export interface AppliesTo {
	openmpi?: VersionRange;
	mpich?: VersionRange;
	/** Cray MPICH, Intel MPI, MVAPICH2-GDR: the vendor MPIs whose switches a rule names. */
	vendorMpi?: VersionRange;
	ucx?: VersionRange;
	cuda?: VersionRange;
	slurm?: VersionRange;
	/** libfabric (OFI), as `fi_info --version` names it. */
	libfabric?: VersionRange;
	/** Independent of every MPI / UCX / CUDA release (kernel, driver tools, the collector itself). */
	any?: VersionRange;
}

/** One diagnostic rule. `reads`, `fixSummary`, `appliesTo` and `verifiedAgainst` are also what docs/rules.md is generated from. */
export interface Rule {
	id: string;
	severity: Severity;
	title: string;
	/** Fact paths the rule reads, e.g. "mpi.openmpi.builtWithCuda". */
	reads: string[];
	/** The releases the rule's claims were checked for. */
	appliesTo: AppliesTo;
	/**
	 * The public sources each claim and fix rests on: an https URL (source file at a tagged release, documentation
	 * page, issue thread) or a section of a page we ship (`docs/device-results.md#anchor`) that says what was measured.
	 */
	verifiedAgainst: SourceRef[];
	/** The usual remedy, for the generated docs (findings carry their own concrete fix). */
	fixSummary: string;
	evaluate(facts: Facts): Finding[];
}

/** Build a finding of `rule` with its id, title, severity and source filled in. */
export function finding(rule: Rule, message: string, evidence: Evidence[], fix?: Fix, severity?: Severity): Finding {
	const f: Finding = {
		id: rule.id, severity: severity ?? rule.severity, title: rule.title, message, evidence,
		source: rule.verifiedAgainst.map((s) => s.url).join(' '), sources: rule.verifiedAgainst.map((s) => ({ ...s })),
	};
	if (fix) { f.fix = fix; }
	return f;
}

/** Drop nulls/undefined from a list of optional evidence. */
export function ev(...items: (Evidence | null | undefined)[]): Evidence[] {
	return items.filter((e): e is Evidence => e !== null && e !== undefined);
}

const SEVERITY_ORDER: Record<Severity, number> = { error: 0, warning: 1, info: 2 };

/** Run every rule; a throwing rule becomes an info finding. Findings come back ordered by severity, stable otherwise. */
export function runRules(rules: readonly Rule[], facts: Facts): Finding[] {
	const out: Finding[] = [];
	for (const rule of rules) {
		try {
			const found = rule.evaluate(facts);
			if (Array.isArray(found)) { out.push(...found); }
		} catch (e) {
			out.push({
				id: `rule-failed:${rule.id}`, severity: 'info', title: `Rule ${rule.id} failed`,
				message: `rule ${rule.id} failed: ${e instanceof Error ? e.message : String(e)}`, evidence: [], source: 'GPU-MPI Doctor',
			});
		}
	}
	return out
		.map((f, i) => ({ f, i }))
		.sort((a, b) => SEVERITY_ORDER[a.f.severity] - SEVERITY_ORDER[b.f.severity] || a.i - b.i)
		.map((x) => x.f);
}
