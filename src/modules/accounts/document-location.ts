// The full location of a referenced document (spec 2.1): the instance's bucket, then the supplier's
// documents root, then the relative path from the payload. Only relative paths are stored, so a
// root or bucket moved by the service team moves every location with it.
export function documentLocation(bucket: string, root: string, path: string): string {
  return [bucket.replace(/\/+$/, ''), root.replace(/^\/+|\/+$/g, ''), path].filter((part) => part !== '').join('/');
}
