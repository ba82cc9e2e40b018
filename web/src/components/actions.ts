// Requests a page starts from its controls: which control is waiting (its button shows progress),
// the error of the last request (for an ErrorNote), and the queries to read again afterwards.
import { useState } from 'react';
import { useQueryClient } from '@tanstack/react-query';

export interface Actions<K> {
  /** The key of the request under way, null when none is. */
  busy: K | null;
  error: unknown;
  setError: (e: unknown) => void;
  /** Runs `fn` as the request `key`: clears the last error, and keeps the one `fn` throws. */
  run: (key: K, fn: () => Promise<unknown>) => Promise<void>;
}

/** Requests told apart by a key, for a page with several buttons that each wait on their own. */
export function useActions<K>(): Actions<K> {
  const [busy, setBusy] = useState<K | null>(null);
  const [error, setError] = useState<unknown>(null);
  const run = async (key: K, fn: () => Promise<unknown>) => {
    setBusy(key);
    setError(null);
    try {
      await fn();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(null);
    }
  };
  return { busy, error, setError, run };
}

/** One kind of request (a form's submit): busy is true while it runs. */
export function useAction() {
  const { busy, error, setError, run } = useActions<true>();
  return {
    busy: busy !== null,
    error,
    setError,
    run: (fn: () => Promise<unknown>) => run(true, fn),
  };
}

/** Reads the queries named again; resolves when all have answered. */
export function useRefresh(): (...keys: string[]) => Promise<void> {
  const qc = useQueryClient();
  return async (...keys) => {
    await Promise.all(keys.map((k) => qc.invalidateQueries({ queryKey: [k] })));
  };
}
