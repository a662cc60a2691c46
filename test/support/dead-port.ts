// A port on loopback that nothing listens on, for an upstream that is down. Not one freePort() found free:
// the test files run in parallel, and a port released there is the kernel's to give the next server that
// listens on port 0 — another file's upstream, which then answered for the "dead" one (a 407 where a
// refused dial was expected). Below the ephemeral range, no listener on port 0 is ever given this one.
export const DEAD_PORT = 1;
