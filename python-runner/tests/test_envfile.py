import json
import os
import shutil
import subprocess
import sys
import unittest

from remote_finetune import envfile
from tests.helpers import TempDirTest


class EnvFile(TempDirTest):
    def test_dotenv_lines(self):
        env, problems = envfile.parse_env(
            "# tokens\nHF_TOKEN=hf_abcdefghijklmnop\nexport WANDB_API_KEY='0123456789abcdef'\n"
            "BATCH_SIZE=4  # override\nMSG=\"a b\"\nnot a line\n=x\n")
        self.assertEqual(env, {"HF_TOKEN": "hf_abcdefghijklmnop", "WANDB_API_KEY": "0123456789abcdef", "BATCH_SIZE": "4", "MSG": "a b"})
        self.assertEqual(problems, ["env line 6: expected KEY=VALUE", "env line 7: expected KEY=VALUE"])

    def test_problems_never_quote_the_line(self):
        _, problems = envfile.parse_env("HF TOKEN hf_supersecretvalue\n")
        self.assertNotIn("supersecret", problems[0])

    # Exactly what src/core/ssh/envFile.ts renderEnvFile writes (test/unit/runs/envFileRoundTrip.test.ts
    # checks the TypeScript side): `export NAME='value'`, a ' written as '\'', values that span lines.
    RENDERED = (
        "export SSH_KEY='-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA+/=\n-----END OPENSSH PRIVATE KEY-----\n'\n"
        "export EVIL='line1\nexport PWNED=1\n$(touch pwned-subst)\n`touch pwned-tick`\n\"\n'\n"
        "export QUOTES=''\\''; touch pwned-sq; echo '\\'' \"x\" \\n'\n"
        "export EDGES='\n  spaced\tand tabbed  \n\r\n'\n"
        "export EMPTY=''\n"
        "export BATCH_SIZE=4\n"
        "export HF_TOKEN=hf_abcdefghijklmnop\n"
    )
    EXPECTED = {
        "SSH_KEY": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA+/=\n-----END OPENSSH PRIVATE KEY-----\n",
        "EVIL": "line1\nexport PWNED=1\n$(touch pwned-subst)\n`touch pwned-tick`\n\"\n",
        "QUOTES": "'; touch pwned-sq; echo ' \"x\" \\n",
        "EDGES": "\n  spaced\tand tabbed  \n\r\n",
        "EMPTY": "",
        "BATCH_SIZE": "4",
        "HF_TOKEN": "hf_abcdefghijklmnop",
    }

    def test_reads_what_the_extension_writes_byte_exact(self):
        self.assertEqual(envfile.parse_env(self.RENDERED), (self.EXPECTED, []))
        p = self.path("env")
        with open(p, "w", encoding="utf-8", newline="") as f:
            f.write(self.RENDERED)
        os.chmod(p, 0o600)
        self.assertEqual(envfile.read_env_file(p), (self.EXPECTED, []), "the \\r inside a value survives the read")

    @unittest.skipUnless(os.path.exists("/bin/sh"), "no /bin/sh")
    def test_runner_and_the_wrappers_shell_agree_and_run_nothing(self):
        p = self.path("env")
        with open(p, "w", encoding="utf-8", newline="") as f:
            f.write(self.RENDERED)
        os.chmod(p, 0o600)
        dump = "import json, os; print(json.dumps({k: v for k, v in os.environ.items() if k in %r or k.startswith('PWNED')}))" % (sorted(self.EXPECTED),)
        shells = [s for s in ("/bin/sh", "/bin/dash", "/bin/bash") if os.path.exists(s)]
        for sh in shells:
            # The wrapper's own line (src/core/ssh/detachedJob.ts WRAPPER_SCRIPT).
            r = subprocess.run([sh, "-c", 'if [ -f env ]; then set -a; . ./env; set +a; fi\nexec "$0" -c "$1"', sys.executable, dump],
                               cwd=self.tmp, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
            self.assertEqual(r.stderr, b"", sh)
            self.assertEqual(json.loads(r.stdout), self.EXPECTED, sh)
            self.assertEqual(sorted(os.listdir(self.tmp)), ["env"], "%s ran something from a value" % sh)
        self.assertEqual(envfile.read_env_file(p)[0], self.EXPECTED)

    def test_dotenv_double_quotes_span_lines_and_read_escapes(self):
        env, problems = envfile.parse_env('K="l1\nl2 \\"q\\" \\\\ \\t \\$x"  # c\nNEXT=1\nS=\'a\\nb\'\n')
        self.assertEqual(problems, [])
        self.assertEqual(env, {"K": 'l1\nl2 "q" \\ \t \\$x', "NEXT": "1", "S": "a\\nb"})

    def test_quoted_value_with_an_inline_comment(self):
        env, problems = envfile.parse_env("A='x y'   # comment\nB=\"z\"#c\nC=plain # c\n")
        self.assertEqual((env, problems), ({"A": "x y", "B": "z", "C": "plain"}, []))

    def test_unclosed_quote_is_a_problem_and_the_lines_after_it_are_read(self):
        env, problems = envfile.parse_env("A=1\nK='hf_supersecretvalue\nB=2\n")
        self.assertEqual(env, {"A": "1", "B": "2"})
        self.assertEqual(problems, ["env line 2: unclosed quote"])
        env, problems = envfile.parse_env('A=1\nK="hf_supersecret\\"\n')
        self.assertEqual((env, problems), ({"A": "1"}, ["env line 2: unclosed quote"]))

    def test_text_after_the_closing_quote_is_a_problem_naming_its_line(self):
        env, problems = envfile.parse_env("A='x' hf_supersecretvalue\nB=2\n")
        self.assertEqual((env, problems), ({"B": "2"}, ["env line 1: text after the closing quote"]))
        # Spanning lines: the entry is dropped and reading goes on after its first line, as python-dotenv does.
        env, problems = envfile.parse_env("A='x\ny' hf_supersecretvalue\nB=2\n")
        self.assertEqual(env, {"B": "2"})
        self.assertEqual(problems, ["env line 2: text after the closing quote", "env line 2: expected KEY=VALUE"])
        self.assertFalse([p for p in problems if "supersecret" in p])

    def test_mode_is_checked(self):
        p = self.write("env", "HF_TOKEN=hf_abcdefghijklmnop\n", mode=0o644)
        env, problems = envfile.read_env_file(p)
        self.assertEqual(env["HF_TOKEN"], "hf_abcdefghijklmnop")
        self.assertIn("0600", problems[0])
        os.chmod(p, 0o600)
        self.assertEqual(envfile.read_env_file(p)[1], [])
        self.assertEqual(envfile.read_env_file(self.path("absent")), ({}, []))

    def test_which_values_are_secret(self):
        env = {"HF_TOKEN": "hf_abcdefghijklmnop", "WANDB_API_KEY": "0123456789abcdef", "BATCH_SIZE": "4",
               "MY_DB_PASSWORD": "hunter2hunter2", "SHORT_TOKEN": "abc", "EPOCHS": "300000000"}
        names = sorted(k for k, _ in envfile.secret_items(env))
        self.assertEqual(names, ["HF_TOKEN", "MY_DB_PASSWORD", "WANDB_API_KEY"])

    def test_redactor_text_and_bytes(self):
        r = envfile.Redactor([("HF_TOKEN", "hf_abcdefghijklmnop"), ("X_KEY", "hf_abcdefghij")])
        self.assertEqual(r.text("tok=hf_abcdefghijklmnop, short=hf_abcdefghij."),
                         "tok=[REDACTED:HF_TOKEN], short=[REDACTED:X_KEY].")
        self.assertEqual(r.bytes(b"x hf_abcdefghijklmnop y"), b"x [REDACTED:HF_TOKEN] y")
        self.assertFalse(envfile.Redactor([]))
        self.assertEqual(envfile.Redactor([]).text("same"), "same")


if __name__ == "__main__":
    unittest.main()


class EncodedSecrets(unittest.TestCase):
    TOKEN = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"

    def test_base64_and_url_encoded_forms_are_redacted_too(self):
        import base64
        import urllib.parse
        from remote_finetune.envfile import Redactor
        r = Redactor([("HF_TOKEN", self.TOKEN), ("WANDB_API_KEY", "a1b2c3d4e5f6+/=&x")])
        lines = [
            "Authorization: Basic " + base64.b64encode(("api:" + self.TOKEN).encode()).decode(),       # embedded, offset 1
            "Authorization: Basic " + base64.b64encode(("user:" + self.TOKEN).encode()).decode(),      # offset 2
            "b64 " + base64.b64encode(self.TOKEN.encode()).decode(),                                    # offset 0
            "urlsafe " + base64.urlsafe_b64encode(("xy:" + self.TOKEN).encode()).decode(),
            "clone https://user:%s@hf.co/x" % urllib.parse.quote("a1b2c3d4e5f6+/=&x", safe=""),
            "plain " + self.TOKEN,
        ]
        for line in lines:
            out = r.text(line)
            self.assertIn("[REDACTED:", out, line)
            for bad in (self.TOKEN, base64.b64encode(self.TOKEN.encode()).decode()[:20], "a1b2c3d4e5f6%2B%2F"):
                self.assertNotIn(bad, out, line)
        self.assertEqual(r.text("nothing secret here: loss 1.23"), "nothing secret here: loss 1.23")
