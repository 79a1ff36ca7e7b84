import { Option } from "commander";

import { EXECUTOR_CHOICES } from "../pipeline/engine/settings.ts";

export const executorOption = (description: string) => new Option("--executor <kind>", description).choices([...EXECUTOR_CHOICES]);
export const redisOption = () => new Option("--redis <url>", "with --executor queue: the Redis of the queue (default: the config's execution.queue.redis)");
export const gitServiceOption = () =>
  new Option(
    "--git-service <host:port>",
    "with --executor queue: where to serve the repositories to workers on other hosts (token: $SWITCH_SWE_GIT_TOKEN; default: the config's execution.queue.git_service, or this machine only)",
  );
export const MIRRORS_HELP =
  "clone repositories from local copies here (OWNER__NAME.bundle, OWNER__NAME.git or OWNER__NAME) instead of their profiles' clone_url (default: $SWITCH_SWE_MIRRORS)";
