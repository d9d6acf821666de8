import { defaultPort } from './parse-args';

export const helpText = `faucet-bridge — let Faucet apps use a model server on this computer

Usage:
  faucet-bridge start [options]
  faucet-bridge --help | --version

Options:
  -p, --port <port>          port to listen on (default ${defaultPort}; env FAUCET_BRIDGE_PORT)
      --host <address>       address to bind (default 127.0.0.1)
      --allow-non-loopback   required to bind anything but a loopback address (prints a warning)
      --upstream <url>       model server, e.g. http://127.0.0.1:11434 (env FAUCET_BRIDGE_UPSTREAM);
                             without it Ollama (11434), LM Studio (1234) and llama.cpp (8080)
                             are looked for on 127.0.0.1
      --upstream-kind <k>    ollama | lmstudio | llamacpp | openai_compatible (default: by port)
      --api-base-url <url>   Faucet control API that usage reports go to (env FAUCET_API_BASE_URL)
      --allow-origin <url>   web page origin allowed to call the bridge; repeat for more
                             (env FAUCET_BRIDGE_ALLOWED_ORIGINS, comma-separated). Never "*".
      --outbox-dir <dir>     where usage reports wait to be forwarded
                             (default $XDG_STATE_HOME/faucet-bridge/outbox or ~/.local/state/…)
  -h, --help                 show this help
  -v, --version              show the version

Environment:
  FAUCET_BRIDGE_UPSTREAM_API_KEY   sent to the model server as a Bearer token, never shown

Endpoints: GET /health, GET /diagnostics, GET /models, POST /v1/chat/completions, POST /usage/report
`;
