/**
 * A function that returns the first copy of each text it was given: the texts a state snapshot's rows repeat (a
 * decision id in every call on it, a grade's instant in every notification of it) held once in memory instead of once
 * per row, as JSON.parse gives them. Same values, so what is derived or written back from them is unchanged. Meant for
 * one load (the table is dropped with the function), or kept with a `limit` on the texts it holds.
 */
export function sharedTexts(limit = Infinity): (text: string) => string {
  const texts = new Map<string, string>()
  return (text) => {
    const held = texts.get(text)
    if (held !== undefined) return held
    // A table kept for a process's life (limit given) starts over when full: what it shared stays shared.
    if (texts.size >= limit) texts.clear()
    texts.set(text, text)
    return text
  }
}
