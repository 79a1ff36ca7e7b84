import { Option } from "commander";

import { EXECUTOR_CHOICES } from "../pipeline/engine/settings.ts";

export const executorOption = (description: string) => new Option("--executor <kind>", description).choices([...EXECUTOR_CHOICES]);
export const redisOption = () => new Option("--redis <url>", "with --executor queue: the Redis of the queue (default: the config's execution.queue.redis)");
export const gitServiceOption = () =>
  new Option(
    "--git-service <host:port>",
    "with --executor queue: where to serve the repositories to workers on other hosts (token: $SWITCH_SWE_GIT_TOKEN; default: the config's execution.queue.git_service, or this machine only)",
  );
