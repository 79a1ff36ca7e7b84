/** Whether a process of this id lives (signal 0 delivers nothing): EPERM means it does, as another user's. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
