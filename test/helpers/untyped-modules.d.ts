declare module 's3rver' {
  const S3rver: new (options: Record<string, unknown>) => { run(): Promise<unknown>; close(): Promise<void> };
  export default S3rver;
}
