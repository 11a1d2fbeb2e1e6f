// Compile-time checks (tsc --strict runs them): every generated call
// returns runs of its record's schema type.
import { test } from "node:test";
import type { components, Run, services, SocialDataRouter } from "../src/index.js";

type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Extract = SocialDataRouter["extract"];
type Svc = (typeof services)[number];
type RecordOf<S extends Svc> = S["platform"] extends keyof Extract
  ? S["method"] extends keyof Extract[S["platform"]]
    ? Extract[S["platform"]][S["method"]] extends (...args: never[]) => Promise<Run<infer T>>
      ? T
      : never
    : never
  : never;
type Schema<S extends Svc> = S["record"] extends keyof components["schemas"] ? components["schemas"][S["record"]] : "no record schema";
/** The services whose call is not typed with its record schema: none. */
type Untyped = Svc extends infer S ? (S extends Svc ? (Equals<RecordOf<S>, Schema<S>> extends true ? never : S) : never) : never;
const allTyped: [Untyped] extends [never] ? true : false = true;

// The body is the document's: a wrong field does not compile.
type CompanyBody = Parameters<Extract["pro_net"]["companyInfo"]>[0];
// @ts-expect-error: bogus is not a field of the body
const bad: CompanyBody = { url: "u", bogus: 1 };

test("every generated call is typed with its record schema (checked by tsc)", () => {
  void allTyped;
  void bad;
});
