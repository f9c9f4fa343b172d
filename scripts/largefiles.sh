#!/usr/bin/env bash
# Refuses committed files over 1 MiB: fails (exit 1) when the tree of REV (default HEAD) holds a file
# larger than 1 MiB (1048576 bytes; $LARGEFILES_LIMIT overrides) that the allow-list does not name, and
# prints each such file with its size. With a range (`main..HEAD`) every commit of the range is checked,
# so a file added and removed again within it is refused too.
#
# The allow-list is scripts/largefiles.allow as committed in the checked commit: one path a line (a
# shell glob matches too, `docs/figures/*.png`), `#` starts a comment. A file belongs there only with
# a reason beside it: the history keeps every version of a large file forever (a 36 MB binary
# built from docs/gen once made 17.7 MB of the 21.4 MB pack).
#
# make test runs it (make largefiles). Usage: scripts/largefiles.sh [REV | REV..REV]
set -euo pipefail

spec=${1:-HEAD}
limit=${LARGEFILES_LIMIT:-1048576}
allow_path=scripts/largefiles.allow

if [[ $spec == *..* ]]; then
	mapfile -t revs < <(git rev-list "$spec")
else
	revs=("$(git rev-parse --verify "$spec^{commit}")")
fi

bad=0
declare -A seen # "path blob" already reported
for rev in "${revs[@]}"; do
	allowed=()
	if list=$(git show "$rev:$allow_path" 2>/dev/null); then
		while IFS= read -r line; do
			line=${line%%#*}
			line=${line%"${line##*[![:space:]]}"}
			line=${line#"${line%%[![:space:]]*}"}
			[[ -n $line ]] && allowed+=("$line")
		done <<<"$list"
	fi
	# <mode> <type> <object> <size padded>\t<path>, NUL-terminated (paths as they are).
	while IFS= read -r -d '' entry; do
		meta=${entry%%$'\t'*}
		path=${entry#*$'\t'}
		read -r _ type blob size <<<"$meta"
		[[ $type == blob && $size =~ ^[0-9]+$ ]] || continue
		((size > limit)) || continue
		ok=0
		for pat in "${allowed[@]}"; do
			# shellcheck disable=SC2053 # a glob match on purpose
			if [[ $path == $pat ]]; then
				ok=1
				break
			fi
		done
		((ok)) && continue
		[[ -n ${seen["$path $blob"]:-} ]] && continue
		seen["$path $blob"]=1
		echo "largefiles: $path is $size bytes (over $limit) in commit ${rev:0:12}, and $allow_path does not list it" >&2
		bad=1
	done < <(git ls-tree -r -l -z --full-tree "$rev")
done

if ((bad)); then
	echo "largefiles: keep large files out of git (generate them, or fetch them in make deps); if one must be committed, list it in $allow_path with the reason" >&2
	exit 1
fi
