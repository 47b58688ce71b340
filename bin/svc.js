#!/usr/bin/env node
// Runs the TypeScript CLI through tsx's ESM loader, so no build step stands between a checkout and `svc`.
import { register } from 'tsx/esm/api'
register()
await import('../cli/svc.ts')
