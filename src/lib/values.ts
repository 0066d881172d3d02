/** A plain object (not null, not an array). */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The message of anything thrown, for a one-line report. */
export const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));
