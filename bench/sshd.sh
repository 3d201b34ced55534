# A throwaway sshd on 127.0.0.1 with its own host and user keys, for the
# benches that compare with scp or rsync over ssh. Sourced; needs W (a
# scratch directory), PIDS (an array the caller's cleanup kills) and
# free_port. Sets sport, sshd_pid and SSH_OPTS (ssh options that reach it as root).
start_sshd() {
  mkdir -p "$W/ssh" /run/sshd
  ssh-keygen -q -t ed25519 -N '' -f "$W/ssh/host_key"
  ssh-keygen -q -t ed25519 -N '' -f "$W/ssh/user_key"
  cp "$W/ssh/user_key.pub" "$W/ssh/authorized_keys"
  chmod 600 "$W/ssh/authorized_keys"
  sport=$(free_port)
  cat > "$W/ssh/sshd_config" <<CFG
Port $sport
ListenAddress 127.0.0.1
HostKey $W/ssh/host_key
AuthorizedKeysFile $W/ssh/authorized_keys
PidFile $W/ssh/sshd.pid
PermitRootLogin yes
PasswordAuthentication no
StrictModes no
UsePAM no
Subsystem sftp /usr/lib/openssh/sftp-server
CFG
  /usr/sbin/sshd -f "$W/ssh/sshd_config" -D -e 2> "$W/ssh/sshd.log" &
  sshd_pid=$!  # its reaped children's CPU is what scp costs the server (bench/loopback/run)
  PIDS+=("$sshd_pid")
  SSH_OPTS=(-i "$W/ssh/user_key" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes)
  sleep 0.5
}
