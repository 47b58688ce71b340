/** The release stage's typed errors: operator refusals print as one line (`svc release …: CODE: message`). */
import { codedError } from '../../common/CodedError.ts'

export class ReleaseError extends codedError({
  RELEASE_NOT_FOUND: { retryable: false, meaning: 'no release has this version' },
  RELEASE_EXISTS: { retryable: false, meaning: 'a release with this version is already sealed; versions are never reused' },
  RELEASE_BAD_VERSION: { retryable: false, meaning: 'a release version is <major>.<minor>.<patch>' },
  DATASET_NOT_FOUND: { retryable: false, meaning: 'no dataset manifest has this hash in this data folder' },
  DATASET_CHANGED: { retryable: false, meaning: "a tape's bytes no longer hash to the manifest's digest" },
  DATASET_EMPTY: { retryable: false, meaning: 'the dataset has no labelled decisions in its window' },
  NOT_EVALUATED: { retryable: false, meaning: 'the release has no sealed gate rows yet (svc release evaluate)' },
  ALREADY_EVALUATED: { retryable: false, meaning: 'the release already has sealed gate rows' },
  GATES_NOT_MET: { retryable: false, meaning: 'a promotion gate failed: the release cannot be activated' },
  ALREADY_ACTIVATED: { retryable: false, meaning: 'activation is one-shot: this release was activated before' },
  NO_ACTIVE_RELEASE: { retryable: false, meaning: 'nothing is active, so there is nothing to roll back' },
  NO_PARENT: { retryable: false, meaning: 'the active release has no parent to roll back to' },
  INCUMBENT_SAW_HOLDOUT: { retryable: false, meaning: "the incumbent's fit window reaches into the candidate's holdout" },
  RELEASE_WRITE: { retryable: true, meaning: 'a release file could not be written or read' },
}) {}
