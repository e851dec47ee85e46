# SPDX-License-Identifier: MIT
# Bash completion for kiln(1). Design: one function, _kiln, reads the
# command (COMP_WORDS[1]) and the word before the cursor; a flag that takes
# a file completes file names, a flag that takes a value of its own form
# completes that form (formats after `--texel-format B=` and after
# `--image B=size:WxH:`), anything else completes the command's flags.
# The lists mirror `kiln help CMD`; keep them in step with it.

_kiln_formats="r8 r8_snorm r8ui r8i r16 r16_snorm r16f r16ui r16i r32f r32ui r32i r64ui r64i rg8 rg8_snorm rg8ui rg8i rg16 rg16_snorm rg16f rg16ui rg16i rg32f rg32ui rg32i r11f_g11f_b10f rgb10_a2 rgb10_a2ui rgba8 rgba8_snorm rgba8ui rgba8i rgba16 rgba16_snorm rgba16f rgba16ui rgba16i rgba32f rgba32ui rgba32i"

_kiln()
{
    local cur prev cmd i
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=""
    [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD-1]}
    COMPREPLY=()
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "info run demo archive wave serve version help --version --help" -- "$cur"))
        return 0
    fi
    cmd=${COMP_WORDS[1]}
    case $cmd in
    help)
        [ "$COMP_CWORD" -eq 2 ] && COMPREPLY=($(compgen -W "info run demo archive wave serve version help" -- "$cur"))
        return 0 ;;
    info | version)
        COMPREPLY=($(compgen -W "--json --help" -- "$cur"))
        return 0 ;;
    archive)
        if [ "$COMP_CWORD" -eq 2 ]; then
            COMPREPLY=($(compgen -W "path ls verify compact gc --help" -- "$cur"))
        elif [ "$prev" != --max-size ]; then
            COMPREPLY=($(compgen -W "--max-size --json --help" -- "$cur"))
        fi
        return 0 ;;
    demo)
        case $prev in
        --out | --trace | --remote) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
        --tonemap) COMPREPLY=($(compgen -W "clamp reinhard aces" -- "$cur")); return 0 ;;
        --frames | --size) return 0 ;;
        esac
        COMPREPLY=($(compgen -W "--frames --size --tonemap --out --precompile --trace --remote --json --help" -- "$cur"))
        return 0 ;;
    wave)
        if [ "$COMP_CWORD" -eq 2 ]; then
            COMPREPLY=($(compgen -W "info run diff levels compare --help" -- "$cur"))
            return 0
        fi
        case $prev in
        --observe | --observe-json) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
        --level) COMPREPLY=($(compgen -W "reference lane wavefront subgroup auto" -- "$cur")); return 0 ;;
        --levels) COMPREPLY=($(compgen -W "reference,lane reference,wavefront lane,wavefront" -- "$cur")); return 0 ;;
        --kernel | --groups | --block | --arg | --out | --max-instructions | --max-work | --max-seconds) return 0 ;;
        esac
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--kernel --disasm --groups --block --arg --out --level --levels --observe --observe-json --max-instructions --max-work --max-seconds --help" -- "$cur"))
        else
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return 0 ;;
    serve)
        case $prev in
        --socket) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
        --allow-uid | --device | --max-objects | --max-bytes | --max-compiles | --max-clients | --hello-timeout | --compile-timeout | --compile-max-bytes) return 0 ;;
        esac
        COMPREPLY=($(compgen -W "--socket --allow-uid --device --mock --max-objects --max-bytes --max-compiles --max-clients --hello-timeout --compile-timeout --compile-max-bytes --help" -- "$cur"))
        return 0 ;;
    run)
        case $prev in
        --push-file | --trace | --remote | --preamble) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
        --lang) COMPREPLY=($(compgen -W "glsl hlsl spirv" -- "$cur")); return 0 ;;
        --texel-format)
            if [[ $cur == *=* ]]; then
                COMPREPLY=($(compgen -P "${cur%%=*}=" -W "$_kiln_formats" -- "${cur#*=}"))
            fi
            return 0 ;;
        --image)
            if [[ $cur == *=size:*x*:* ]]; then
                COMPREPLY=($(compgen -P "${cur%:*}:" -W "$_kiln_formats" -- "${cur##*:}"))
            elif [[ $cur == *=* && $cur != *=size:* ]]; then
                COMPREPLY=($(compgen -P "${cur%%=*}=" -f -- "${cur#*=}"))
            fi
            return 0 ;;
        --buffer | --out | --out-image)
            if [[ $cur == *=png:* ]]; then
                COMPREPLY=($(compgen -P "${cur%%:*}:" -f -- "${cur#*:}"))
            elif [[ $cur == *=* && $cur != *=size:* ]]; then
                COMPREPLY=($(compgen -P "${cur%%=*}=" -f -- "${cur#*=}"))
            fi
            return 0 ;;
        --sampler)
            [[ $cur == *=* ]] && COMPREPLY=($(compgen -P "${cur%%=*}=" -W "linear nearest linear,clamp linear,repeat linear,mirror linear,border nearest,clamp nearest,repeat nearest,mirror nearest,border" -- "${cur#*=}"))
            return 0 ;;
        --entry | --define | --preamble-text | --workgroup-size | --groups | --param | --push | --spec | --frames | --timeout) return 0 ;;
        esac
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--entry --lang --define --preamble --preamble-text --workgroup-size --groups --param --push --push-file --spec --buffer --bind --address --out --image --out-image --sampler --texel-format --frames --check --robust -q --quiet --trace --timeout --remote --json --help" -- "$cur"))
        else
            COMPREPLY=($(compgen -f -X '!*.comp' -- "$cur") $(compgen -f -X '!*.spv' -- "$cur")
                       $(compgen -f -X '!*.hlsl' -- "$cur") $(compgen -d -- "$cur"))
        fi
        return 0 ;;
    esac
}
complete -F _kiln kiln
