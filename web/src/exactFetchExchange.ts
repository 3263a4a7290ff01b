// Queries and mutations over POST, sent and read with every JSON number as it is. urql's own
// fetchExchange reads answers with JSON.parse, which rounds 12345678901234567890 to
// 12345678901234567000: the event page would show a payload that is not the one stored, and an
// edit would store the rounded number. Here each such number stays as its text (JSON.rawJSON), and
// JSON.stringify prints it back as it came, in the payload shown and in the edit sent.
import { makeErrorResult, makeResult, type Exchange, type Operation, type OperationResult } from '@urql/core';
import { makeFetchBody, makeFetchOptions, makeFetchURL } from '@urql/core/internal';
import { filter, fromPromise, merge, mergeMap, pipe, share, takeUntil } from 'wonka';
import { parseJsonKeepingNumbers } from '../../src/db/exactJson.ts';

const isFetched = (op: Operation) => op.kind === 'query' || op.kind === 'mutation';

export const exactFetchExchange: Exchange = ({ forward }) => (operations$) => {
  const shared$ = share(operations$);
  const results$ = pipe(
    shared$,
    filter(isFetched),
    mergeMap((op) => pipe(fromPromise(execute(op)), takeUntil(pipe(shared$, filter((o) => o.kind === 'teardown' && o.key === op.key))))),
  );
  return merge([results$, forward(pipe(shared$, filter((op) => !isFetched(op))))]);
};

async function execute(op: Operation): Promise<OperationResult> {
  let response: Response | undefined;
  try {
    const body = makeFetchBody(op);
    // urql prints variables with its own stringify, which takes a kept number for an object; JSON.stringify prints it.
    response = await fetch(makeFetchURL(op, body), { ...makeFetchOptions(op, body), body: JSON.stringify(body) });
    return makeResult(op, parseJsonKeepingNumbers(await response.text()) as object, response);
  } catch (error) {
    const failure = response && !response.ok && response.statusText ? new Error(response.statusText) : (error as Error);
    return makeErrorResult(op, failure, response);
  }
}
