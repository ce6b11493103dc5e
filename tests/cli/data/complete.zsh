# Type each case's line and a TAB into an interactive zsh (zpty) whose $fpath holds the
# completion script; print "ok" when the line was completed as expected, else FAIL.
# usage: zsh -f complete.zsh FPATH_DIR CASES_FILE   (a case: <typed line> TAB <completed line>)
setopt extendedglob
zmodload zsh/zpty
zmodload zsh/datetime
zpty z zsh -f -i
zpty -w z "stty cols 4000; PS1='> '; fpath=($1 \$fpath); autoload -U compinit; compinit -u; unsetopt beep; print READY"
out=''
deadline=$(( EPOCHREALTIME + 20 ))
while [[ $out != *READY* ]] && (( EPOCHREALTIME < deadline )); do zpty -r -t z line && out+=$line || sleep 0.02; done
sleep 0.2; while zpty -r -t z line; do :; done
while IFS=$'\t' read -r typed want; do
  zpty -n -w z "$typed"$'\t'
  out=''
  deadline=$(( EPOCHREALTIME + 5 ))
  clean=''
  while (( EPOCHREALTIME < deadline )); do
    if zpty -r -t z line; then out+=$line; else sleep 0.02; fi
    clean=${out//$'\e'\[[0-9;?]#[a-zA-Z]/}
    [[ $clean == *"$want"* ]] && break
  done
  if [[ $clean == *"$want"* ]]; then print -r -- "ok	$typed"; else clean=${clean//[$'\r\n']/ }; print -r -- "FAIL	$typed	${clean[-200,-1]}"; fi
  zpty -n -w z $'\x15'   # Ctrl-U: clear the line
  sleep 0.05; while zpty -r -t z line; do :; done
done < $2
zpty -d z
