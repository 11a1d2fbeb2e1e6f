// The READMEs' and the dashboard's snippets, compiled by tsc (never run:
// nothing here calls them).
import { SdrError, SocialDataRouter, verifyWebhook } from "../src/index.js";

export async function firstCall() {
  const client = new SocialDataRouter(process.env.SDR_TEST_KEY!, { baseUrl: process.env.SDR_BASE_URL }); // sdr_test_…
  const run = await client.extract.pro_net.companyInfo({ url: "https://www.linkedin.com/company/the-kraft-heinz-company" });
  console.log(run.data[0]?.company, run.credits_used, run.livemode); // …, false
}

export async function asyncRun(client: SocialDataRouter) {
  const run = await client.extract.forum_net.subredditPostsAsync({ url: "https://www.reddit.com/r/golang", limit: 5000 });
  await run.wait();
  for await (const post of run) console.log(post.title);
}

export async function errors(client: SocialDataRouter) {
  try {
    await client.extract.pro_net.profileInfo({ url: "https://www.linkedin.com/in/rbranson" });
  } catch (e) {
    if (e instanceof SdrError && e.isMoney) console.log("top up:", e.code);
    else if (e instanceof SdrError) console.log(e.status, e.code, e.type, e.runId, e.retryAfter);
    else throw e;
  }
}

export function webhook(rawBody: string, headers: Record<string, string>) {
  const event = verifyWebhook(process.env.SDR_WEBHOOK_SECRET!, rawBody, headers);
  console.log(event.id, event.type);
}
