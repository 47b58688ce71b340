/** A value now, or later. In-memory reads answer synchronously so the hottest routes never hop through a microtask. */
export type MaybePromise<T> = T | Promise<T>

/** f(value) now when `value` is already there, else once it resolves (callers await only real promises). */
export function andThen<T, R>(value: MaybePromise<T>, f: (v: T) => R): R | Promise<R> {
  return value instanceof Promise ? value.then(f) : f(value)
}
