// One line of the standalone sandbox's console log.

/** JSON of a log object whose errors keep their name, message and code (JSON.stringify gives `{}`). */
export function logJson(obj: unknown): string {
  return JSON.stringify(obj, (_key, value: unknown) =>
    value instanceof Error ? { name: value.name, message: value.message, ...((value as { code?: unknown }).code !== undefined ? { code: (value as { code?: unknown }).code } : {}) } : value,
  );
}
