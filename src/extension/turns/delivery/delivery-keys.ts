/**
 * The details field of a message pi holds (a tool result, a wake) that names the notices it
 * carries: their delivery keys (deliveries.ts), never shown to the model. On its own so that
 * what reads and writes it at every pi's load (notice-hold.ts, wait_agent) imports nothing else.
 */
export const DELIVERY_KEYS_FIELD = "delivery_keys";
