import { Webhook, WebhookVerificationError } from "standardwebhooks";
import type { components } from "./schema.gen.js";

/** A verified delivery: run.completed, run.failed, run.cancelled (data is the run) or webhook.test. */
export interface WebhookEvent {
  /** The delivery's webhook-id, the same on each retry: process each once. */
  id: string;
  type: "run.completed" | "run.failed" | "run.cancelled" | "webhook.test";
  timestamp: string;
  data: components["schemas"]["Run"] | { endpoint_id: string; message: string };
}

export { WebhookVerificationError };

/**
 * Verifies a delivery signed as Standard Webhooks specifies, with the
 * endpoint's `whsec_…` secret, and returns its event; throws
 * WebhookVerificationError for a wrong signature, a timestamp more than 5
 * minutes off or a missing header. Pass the raw body as received, before
 * any JSON parsing.
 */
export function verifyWebhook(secret: string, rawBody: string | Buffer, headers: Headers | Record<string, string | string[] | undefined>): WebhookEvent {
  const h = (name: string): string => {
    const v = headers instanceof Headers ? headers.get(name) : headers[name];
    return (Array.isArray(v) ? v[0] : v) ?? "";
  };
  const wanted = { "webhook-id": h("webhook-id"), "webhook-timestamp": h("webhook-timestamp"), "webhook-signature": h("webhook-signature") };
  const event = new Webhook(secret).verify(rawBody, wanted) as Omit<WebhookEvent, "id">;
  return { ...event, id: wanted["webhook-id"] };
}
