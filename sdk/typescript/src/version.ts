/** The SDK's version, sent in the User-Agent header; equal to package.json's "version" (a test checks). */
export const SDK_VERSION = "0.1.0";
