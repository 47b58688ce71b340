import { codedError, type CodeTable } from '../../common/CodedError.ts'

/** The HTTP server could not take its address. */
export const LISTEN_ERRORS = {
  PORT_IN_USE: {
    retryable: false,
    meaning: 'the address is held by another process (another `svc start`, or anything else): the listen socket is exclusive, so two services never share a port and split its requests',
  },
} as const satisfies CodeTable<string>

export class ListenError extends codedError(LISTEN_ERRORS) {}
