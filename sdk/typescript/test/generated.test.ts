// schema.gen.ts is what the pinned openapi-typescript writes from
// sdk/openapi.json (make sdk): a stale copy fails here. scripts/sdkgen's
// own test checks sdk/openapi.json and services.gen.ts against the
// declarations.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url)); // sdk/typescript/

test("src/schema.gen.ts is openapi-typescript's output for sdk/openapi.json", () => {
  const out = join(mkdtempSync(join(tmpdir(), "sdr-sdk-")), "schema.gen.ts");
  execFileSync(join(root, "node_modules", ".bin", "openapi-typescript"), ["../openapi.json", "-o", out], { cwd: root, stdio: "pipe" });
  assert.ok(readFileSync(join(root, "src", "schema.gen.ts"), "utf8") === readFileSync(out, "utf8"), "src/schema.gen.ts is stale: run make sdk");
});
