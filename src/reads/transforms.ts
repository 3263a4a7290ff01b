// Recorded payload transforms: by id and the newest.
export { findTransform as readTransform, findTransformOrThrow as readTransformOrThrow, findTransforms as readTransforms } from '../db/models/transforms.ts';
