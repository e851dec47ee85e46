/* SPDX-License-Identifier: MIT */
/* external.cl: calls a function defined nowhere: its relocatable object
 * refers to an undefined symbol, which the loader refuses by name. */
int kiln_wave_elsewhere(int x);

__kernel void calls_out(__global int *p)
{
    p[0] = kiln_wave_elsewhere(p[1]);
}
