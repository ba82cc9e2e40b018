// A clone's progress and end on its new volume's status (docs/volumes.md), as the copies module
// applies its source agent's reports: `cloning N%` while copied, `ready` once copied, `clone
// failed: why` if not. Only a volume still cloning moves: a copy into a ready volume changes nothing.
export { cloneEnded, cloneProgress } from './volumes.repo.js';
