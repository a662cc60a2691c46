// A bound on a call that cannot be cancelled (a REST client's promise, a Secret Manager read): its
// promise, or `timeout()`'s error once `ms` have passed. The call itself runs on; a late answer is left
// to whoever still holds the promise (dropped, or cached by the caller). The timer is unref'd: a bound
// never keeps a process alive on its own.
export function withDeadline<T>(work: Promise<T>, ms: number, timeout: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(timeout()), ms);
    timer.unref?.();
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
